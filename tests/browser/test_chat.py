"""The chat page in Chromium against the live daphne server (local API at 200 tokens/s)."""

import itertools
import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from playground.chat.models import Conversation, Message
from playground.connections.models import ensure_local_connection
from tests.browser.conftest import orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

# Generous: the machine is shared, and a generation may take a while to finish under load.
DONE = 60_000


def send(page, text: str):
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_be_attached()
    return answer


# The length of the newest answer's text at each frame that changed it, until that answer no longer streams.
WATCH_GROWTH = """() => {
  const lengths = window.__lengths = [];
  (function look() {
    const answers = document.querySelectorAll('article[data-role="assistant"]');
    const answer = answers[answers.length - 1];
    const body = answer && answer.querySelector(".message-body");
    if (body) {
      const length = body.innerText.length;
      if (lengths[lengths.length - 1] !== length) lengths.push(length);
      if (answer.dataset.status !== "streaming") return;
    }
    requestAnimationFrame(look);
  })();
}"""


def test_send_and_watch_the_answer_grow(open_chat):
    page = open_chat()
    answer = send(page, "Write 300 words about rivers")
    expect(page.locator('article[data-role="user"]')).to_contain_text("Write 300 words about rivers")
    expect(page.get_by_role("button", name="Stop")).to_be_enabled()

    # Watched in the page at every frame: a loaded machine's round trips from the test could miss most of it.
    page.evaluate(WATCH_GROWTH)
    expect(answer).not_to_have_attribute("data-status", "streaming", timeout=DONE)
    lengths = page.evaluate("window.__lengths")
    growing = [b for a, b in itertools.pairwise(lengths) if b > a]
    assert len(growing) >= 5, f"the answer did not visibly grow while streaming: {lengths}"
    assert lengths[0] < lengths[-1]
    # The first message names the conversation, in the list and in the toolbar (once the answer's first words are
    # on screen: composer.js).
    expect(page.locator(".chat-title")).to_have_text("Write 300 words about rivers")
    expect(page.locator("#conversation-list")).to_contain_text("Write 300 words about rivers")

    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    # Live and reloaded renders agree, and the final one carries the per-answer figures.
    live_html = answer.locator(".message-body .blocks").inner_html()
    # The final render kept the blocks on screen (they were an exact prefix of it) instead of re-rendering them.
    assert page.evaluate("window.ChatClient.stats.patched") == 1
    meta = answer.locator(".message-meta")
    expect(meta).to_contain_text("completion")
    expect(meta).to_contain_text("TTFT")
    expect(meta).to_contain_text("tok/s")
    expect(meta.get_by_role("button", name="Copy trace id")).to_be_visible()
    expect(answer.locator("h1, h2").first).to_be_visible()
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    expect(page.get_by_role("button", name="Stop")).to_be_disabled()
    screenshot(page, "chat-answer-light")

    page.reload()
    reloaded = page.locator('article[data-role="assistant"]').last
    assert _normalised(reloaded.locator(".message-body .blocks").inner_html()) == _normalised(live_html)
    page.get_by_role("button", name="Toggle dark mode").click()
    screenshot(page, "chat-answer-dark")


def _normalised(html: str) -> str:
    return "".join(html.split())


def test_stop_mid_stream_keeps_the_partial_answer_across_a_reload(open_chat):
    page = open_chat()
    answer = send(page, "Write 3000 words about mountains")
    page.wait_for_function("node => node.innerText.length > 200", arg=answer.locator(".message-body").element_handle())
    page.get_by_role("button", name="Stop").click()
    expect(answer).to_have_attribute("data-status", "stopped", timeout=15_000)
    expect(answer).to_contain_text("Stopped")
    shown = answer.locator(".message-body").inner_text()
    assert len(shown) > 200
    message = orm(Message.objects.get, pk=answer.get_attribute("data-message-id"))
    assert message.status == Message.STOPPED
    assert 200 < len(message.content) < 12000  # far from the whole 3000 words

    page.reload()
    reloaded = page.locator('article[data-role="assistant"]').last
    expect(reloaded).to_have_attribute("data-status", "stopped")
    expect(reloaded.get_by_role("button", name="Retry")).to_be_visible()
    assert reloaded.locator(".message-body").inner_text()[:150] == shown[:150]


def test_escape_stops_the_stream(open_chat):
    page = open_chat()
    answer = send(page, "Write 3000 words about forests")
    page.wait_for_function("node => node.innerText.length > 50", arg=answer.locator(".message-body").element_handle())
    page.keyboard.press("Escape")
    expect(answer).to_have_attribute("data-status", "stopped", timeout=15_000)


def test_a_retried_stopped_answer_stays_until_the_new_one_is_complete(open_chat):
    page = open_chat()
    answer = send(page, "Write 200 words about lakes")
    page.wait_for_function("node => node.innerText.length > 30", arg=answer.locator(".message-body").element_handle())
    page.keyboard.press("Escape")
    expect(answer).to_have_attribute("data-status", "stopped", timeout=15_000)
    old_id = answer.get_attribute("data-message-id")
    answer.get_by_role("button", name="Retry").click()
    new = page.locator('article[data-role="assistant"]').last
    expect(new).not_to_have_attribute("data-message-id", old_id)
    expect(new).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(page.locator(f'article[data-message-id="{old_id}"]')).to_have_count(0)
    assert not orm(Message.objects.filter(pk=old_id).exists)


def test_an_upstream_429_names_the_limit_and_offers_retry_after_a_countdown(open_chat):
    page = open_chat()
    answer = send(page, "Hello there [fault:429-rpm]")
    expect(answer).to_have_attribute("data-status", "error", timeout=DONE)
    alert = answer.locator(".message-notice")
    expect(alert).to_contain_text("Rate limit reached (RPM)")
    expect(alert).to_contain_text("requests per minute")
    retry = alert.get_by_role("button", name="Retry")
    expect(retry).to_be_visible()
    expect(alert).to_contain_text("Retry possible in")
    expect(retry).to_be_disabled()
    screenshot(page, "chat-error-429")
    page.get_by_role("button", name="Toggle dark mode").click()
    screenshot(page, "chat-error-429-dark")
    expect(retry).to_be_enabled(timeout=8000)

    retry.click()
    # A new attempt follows the failed answer, which stays until an attempt completes (this one meets the same
    # fault again, so both stay).
    expect(page.locator('article[data-role="assistant"]')).to_have_count(2)
    expect(page.locator('article[data-role="assistant"]').last).to_have_attribute("data-status", "error", timeout=DONE)
    expect(page.locator(f'article[data-message-id="{answer.get_attribute("data-message-id")}"]')).to_have_count(1)


def test_a_stream_cut_midway_keeps_the_partial_answer_and_offers_retry(open_chat):
    page = open_chat()
    answer = send(page, "Write 300 words about lakes [fault:drop-after-5]")
    expect(answer).to_have_attribute("data-status", "error", timeout=DONE)
    alert = answer.locator(".message-notice")
    expect(alert).to_contain_text("The stream was cut off")
    expect(alert).to_contain_text("partial answer above is kept")
    expect(alert.get_by_role("button", name="Retry")).to_be_visible()
    assert answer.locator(".message-body").inner_text().strip() != ""


def test_reasoning_streams_into_its_thinking_block(open_chat):
    page = open_chat("local/reasoner")
    answer = send(page, "What is 17 * 3?")
    thinking = answer.locator("details.thinking")
    expect(thinking).to_be_visible()
    expect(thinking.locator("summary")).to_contain_text("Thinking")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    reasoning = thinking.locator(".thinking-text").text_content().strip()
    assert len(reasoning) > 20
    expect(answer.locator(".message-body")).to_contain_text("51")
    # The reasoning stays out of the answer itself, and the block opens on demand.
    assert reasoning not in answer.locator(".message-body").inner_text()
    thinking.locator("summary").click()
    expect(thinking.locator(".thinking-text")).to_be_visible()
    screenshot(page, "chat-reasoning")


def test_a_malicious_answer_is_rendered_inert(open_chat):
    page = open_chat()
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    payload = "<script>alert('xss')</script> <img src=x onerror=alert(1)> [go](javascript:alert(2))"
    answer = send(page, f'Please quote: "{payload}"')
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    body = answer.locator(".message-body")
    expect(body).to_contain_text("<script>alert('xss')</script>")
    expect(body).to_contain_text("<img src=x onerror=alert(1)>")
    assert page.locator("#thread script").count() == 0
    assert page.locator("#thread img").count() == 0
    assert page.locator('#thread [href^="javascript"]').count() == 0
    assert page.locator("#thread [onerror], #thread [onclick]").count() == 0
    page.wait_for_timeout(300)
    assert dialogs == []


def test_the_panel_shows_only_the_parameters_the_model_supports(open_chat):
    page = open_chat("local/reasoner")
    panel = page.locator("#chat-panel")  # compare's columns have fields of the same names
    expect(panel.get_by_label("thinking_budget")).to_be_visible()
    # The spec's default is a placeholder, not a value: nothing is sent until the user sets it.
    expect(panel.get_by_label("thinking_budget")).to_have_value("")
    expect(panel.get_by_label("thinking_budget")).to_have_attribute("placeholder", "4096")
    expect(panel.get_by_label("temperature")).to_be_visible()
    screenshot(page, "chat-panel-reasoner")

    # The panel collapses (and comes back) from the toolbar.
    page.get_by_role("button", name="Settings", exact=True).click()
    expect(page.locator("#chat-panel")).to_be_hidden()
    page.get_by_role("button", name="Settings", exact=True).click()
    expect(page.locator("#chat-panel")).to_be_visible()

    page.get_by_label("Model", exact=True).select_option("local/chat")
    expect(panel.get_by_label("thinking_budget")).to_have_count(0)
    expect(panel.get_by_label("temperature")).to_be_visible()
    # The switch is saved: a reload shows the same model.
    page.wait_for_timeout(600)
    page.reload()
    expect(page.get_by_label("Model", exact=True)).to_have_value("local/chat")
    expect(panel.get_by_label("thinking_budget")).to_have_count(0)


def test_an_invalid_parameter_is_named_with_its_limit(open_chat):
    page = open_chat("local/reasoner")
    panel = page.locator("#chat-panel")  # compare's columns have fields of the same names
    panel.get_by_label("thinking_budget").fill("50")
    panel.get_by_label("thinking_budget").press("Tab")
    expect(page.locator("#panel")).to_contain_text("thinking_budget: must be at least 128")


def test_the_request_tab_shows_the_exact_body_without_the_key(open_chat, live_server, alice):
    page = open_chat("local/chat", system_prompt="Be brief.")
    page.get_by_role("textbox", name="Message").fill("Draft question")
    page.get_by_role("tab", name="Request").click()
    preview = page.locator("#request-preview")
    expect(preview).to_contain_text('"model": "local/chat"')
    expect(preview).to_contain_text("Be brief.")
    expect(preview).to_contain_text("Draft question")
    assert orm(lambda: ensure_local_connection(alice).get_key()) not in preview.inner_text()


def test_a_narrow_screen_turns_the_panes_into_drawers(open_chat):
    page = open_chat()
    page.set_viewport_size({"width": 390, "height": 800})
    expect(page.locator("#conversation-drawer")).to_be_hidden()
    expect(page.locator("#chat-panel")).to_be_hidden()
    send(page, "What is 2 + 2?")
    expect(page.locator('article[data-role="assistant"]').last).to_have_attribute(
        "data-status", "complete", timeout=DONE
    )
    screenshot(page, "chat-phone")
    page.get_by_role("button", name="Show conversations").click()
    expect(page.locator("#conversation-drawer")).to_be_visible()
    screenshot(page, "chat-phone-drawer")


def test_a_dropped_websocket_reconnects_and_the_answer_has_no_gap_and_no_duplicate(open_chat):
    page = open_chat()
    answer = send(page, "Write 600 words about glaciers")
    page.wait_for_function("node => node.innerText.length > 300", arg=answer.locator(".message-body").element_handle())
    page.evaluate("window.ChatClient.drop()")
    page.wait_for_timeout(400)
    page.evaluate("window.ChatClient.drop()")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    message = orm(Message.objects.get, pk=answer.get_attribute("data-message-id"))
    live = answer.locator(".message-body .blocks").inner_html()
    page.reload()
    reloaded = page.locator('article[data-role="assistant"]').last.locator(".message-body .blocks").inner_html()
    assert _normalised(live) == _normalised(reloaded)
    assert "glaciers" in message.content.lower()


def test_a_second_tab_opened_mid_stream_sees_the_whole_answer(open_chat, context):
    page = open_chat()
    answer = send(page, "Write 500 words about deserts")
    page.wait_for_function("node => node.innerText.length > 200", arg=answer.locator(".message-body").element_handle())
    second = context.new_page()
    second.goto(page.url)
    other = second.locator('article[data-role="assistant"]').last
    expect(other).to_have_attribute("data-status", "streaming")
    expect(other).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    first_text = answer.locator(".message-body").inner_text()
    assert other.locator(".message-body").inner_text() == first_text


def test_code_blocks_are_highlighted_with_a_copy_button(open_chat):
    page = open_chat()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    answer = send(page, "Write a python code example")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    block = answer.locator(".code-block").first
    expect(block.locator("code.language-python")).to_be_visible()
    assert block.locator("span.tok-k").count() > 0
    copy = block.locator(".copy-button")
    expect(copy).to_have_accessible_name("Copy")
    copy.click()
    expect(copy).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == block.locator("pre code").text_content()
    screenshot(page, "chat-code")


def test_remote_images_load_only_after_a_click(open_chat, live_server):
    page = open_chat()
    image_url = f"{live_server.url}/static/img/favicon.svg?probe=1"
    requested = []
    page.on("request", lambda request: requested.append(request.url) if "probe=1" in request.url else None)
    answer = send(page, f'Please quote: "![a logo]({image_url})"')
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    placeholder = answer.get_by_role("button", name="Load image: a logo")
    expect(placeholder).to_be_visible()
    assert answer.locator("img").count() == 0
    page.wait_for_timeout(300)
    assert requested == []
    placeholder.click()
    expect(answer.locator("img")).to_have_attribute("src", image_url)
    page.wait_for_timeout(300)
    assert requested == [image_url]


def test_a_new_user_sees_the_empty_state_and_starts_a_conversation_from_the_composer(alice_page, live_server):
    orm(call_command, "seed_catalog", verbosity=0)
    page = alice_page
    page.goto("/")
    expect(page.locator("#conversation-list")).to_contain_text(
        "No conversations yet: each one you start is listed here."
    )
    screenshot(page, "chat-empty")
    box = page.get_by_role("textbox", name="Message")
    box.fill("What is 6 * 7?")
    box.press("Enter")
    page.wait_for_url("**/c/*/")
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(answer.locator(".message-body")).to_contain_text("42")
    expect(page.locator("#conversation-list")).to_contain_text("What is 6 * 7?")

    # Ctrl+K focuses the live search, which filters the list by title and content.
    page.keyboard.press("Control+k")
    search = page.get_by_role("searchbox", name="Search conversations")
    expect(search).to_be_focused()
    search.press_sequentially("zebra")
    expect(page.locator("#conversation-list")).to_contain_text("No conversation matches")
    search.fill("")
    search.press_sequentially("6 * 7")
    expect(page.locator("#conversation-list a")).to_have_count(1)


def test_tools_are_edited_as_json_and_sent_with_the_request(open_chat):
    page = open_chat("local/tools")
    page.get_by_role("tab", name="Tools").click()
    tools = '[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]'
    page.get_by_role("textbox", name="tools").fill(tools)
    page.get_by_role("textbox", name="tools").press("Tab")
    expect(page.get_by_role("tab", name="Tools")).to_have_attribute("aria-selected", "true")
    page.get_by_role("tab", name="Request").click()
    expect(page.locator("#request-preview")).to_contain_text('"name": "get_weather"')
    page.get_by_role("tab", name="Tools").click()
    page.get_by_role("textbox", name="tools").fill("[not json")
    page.get_by_role("textbox", name="tools").press("Tab")
    expect(page.locator("#panel-tools").get_by_role("alert")).to_contain_text("tools")


def test_a_send_in_one_tab_appears_live_in_another_with_its_question(open_chat, context):
    page = open_chat()
    other = context.new_page()
    other.goto(page.url)
    other.wait_for_function("() => window.ChatClient !== undefined")
    other.wait_for_timeout(300)
    answer = send(page, "Write 200 words about volcanoes")
    mirrored = other.locator('article[data-role="assistant"]').last
    expect(mirrored).to_have_attribute("data-status", "streaming")
    expect(other.locator('article[data-role="user"]')).to_have_text(re.compile("Write 200 words about volcanoes"))
    expect(mirrored).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    roles = other.locator("#thread article").evaluate_all("nodes => nodes.map(n => n.dataset.role)")
    assert roles == ["user", "assistant"]
    assert mirrored.locator(".message-body").inner_text() == answer.locator(".message-body").inner_text()


# Two panel edits in a row: on a loaded machine (both CI lanes, 2 cores) a request still in flight is replaced by the
# next one's and htmx logs the abort, as in test_tool_round_trip.py.
@pytest.mark.console_errors(r"^htmx:sendAbort\b", r"^htmx:afterRequest\b")
def test_non_streaming_mode_with_two_choices_works_through_the_same_page(open_chat):
    page = open_chat()
    page.get_by_label("stream").uncheck()
    page.get_by_label("n", exact=True).fill("2")
    page.get_by_label("n", exact=True).press("Tab")
    expect(page.locator("#panel")).to_contain_text("Saved")
    answer = send(page, "What is 12 + 30?")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(answer.locator(".message-body")).to_contain_text("42")
    expect(answer.get_by_role("tab", name="Choice 2")).to_be_visible()
    message = orm(Message.objects.get, pk=answer.get_attribute("data-message-id"))
    assert message.params.get("stream") is False
    expect(page.locator("#conversation-list")).to_contain_text("What is 12 + 30?")  # the list follows the turn
    screenshot(page, "chat-non-streaming")


def test_rename_duplicate_and_delete_from_the_toolbar(open_chat):
    page = open_chat()
    send(page, "What is 1 + 1?")
    expect(page.locator('article[data-role="assistant"]').last).to_have_attribute(
        "data-status", "complete", timeout=DONE
    )
    page.locator(".rename summary").click()
    page.get_by_role("textbox", name="Title").fill("Arithmetic")
    page.get_by_role("button", name="Rename").click()
    expect(page.locator(".chat-title")).to_have_text("Arithmetic")

    page.get_by_role("button", name="Duplicate").click()
    expect(page.locator(".chat-title")).to_have_text("Arithmetic (copy)")
    expect(page.locator("#thread article")).to_have_count(2)

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete").click()
    expect(page.locator("#conversation-list a")).to_have_count(1)
    expect(page.locator("#conversation-list")).to_contain_text("Arithmetic")
    assert orm(Conversation.objects.count) == 1


def test_a_scripted_answer_is_rendered_as_markdown(open_chat):
    """The local model says what the message's [say:…] directive states; the directive itself is not echoed."""
    page = open_chat()
    answer = send(page, "Greet me [say:Hello **world**, run `make test`.]")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(answer.locator(".message-body strong")).to_have_text("world")
    expect(answer.locator(".message-body code")).to_have_text("make test")
    expect(answer.locator(".message-body")).to_have_text("Hello world, run make test.")
