"""The chat page in Chromium against the live daphne server (local API at 200 tokens/s)."""

import time

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from playground.chat.models import Conversation, Message
from playground.connections.models import ensure_local_connection
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Generous: the machine is shared, and a generation may take a while to finish under load.
DONE = 60_000


@pytest.fixture
def open_chat(alice, alice_page, live_server):
    """Open a fresh conversation of alice on a model; returns the page."""
    call_command("seed_catalog", verbosity=0)

    def open_(model_id="local/chat", **fields):
        conversation = Conversation.objects.create(
            owner=alice, connection=ensure_local_connection(alice), model_id=model_id, **fields
        )
        alice_page.goto(f"/c/{conversation.pk}/")
        expect(alice_page.get_by_role("textbox", name="Message")).to_be_visible()
        # The websocket must be up before sending, or the first deltas arrive by snapshot only.
        alice_page.wait_for_function("window.ChatClient !== undefined")
        alice_page.wait_for_timeout(300)
        return alice_page

    return open_


def send(page, text: str):
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_be_attached()
    return answer


def body_length(answer) -> int:
    return answer.locator(".message-body").evaluate("node => node.innerText.length")


def test_send_and_watch_the_answer_grow(open_chat):
    page = open_chat()
    answer = send(page, "Write 300 words about rivers")
    expect(page.locator('article[data-role="user"]')).to_contain_text("Write 300 words about rivers")
    expect(page.get_by_role("button", name="Stop")).to_be_enabled()

    lengths = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and answer.get_attribute("data-status") == "streaming":
        lengths.append(body_length(answer))
        page.wait_for_timeout(120)
    growing = [b for a, b in zip(lengths, lengths[1:]) if b > a]
    assert len(growing) >= 5, f"the answer did not visibly grow while streaming: {lengths}"
    assert lengths[0] < lengths[-1]

    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    # Live and reloaded renders agree, and the final one carries the per-answer figures.
    live_html = answer.locator(".message-body .blocks").inner_html()
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
    page.wait_for_function(
        "node => node.innerText.length > 200", arg=answer.locator(".message-body").element_handle()
    )
    page.get_by_role("button", name="Stop").click()
    expect(answer).to_have_attribute("data-status", "stopped", timeout=15_000)
    expect(answer).to_contain_text("Stopped")
    shown = answer.locator(".message-body").inner_text()
    assert len(shown) > 200
    message = Message.objects.get(pk=answer.get_attribute("data-message-id"))
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
    page.wait_for_function(
        "node => node.innerText.length > 50", arg=answer.locator(".message-body").element_handle()
    )
    page.keyboard.press("Escape")
    expect(answer).to_have_attribute("data-status", "stopped", timeout=15_000)


def test_an_upstream_429_names_the_limit_and_offers_retry_after_a_countdown(open_chat):
    page = open_chat()
    answer = send(page, "Hello there [fault:429-rpm]")
    expect(answer).to_have_attribute("data-status", "error", timeout=DONE)
    alert = answer.get_by_role("alert")
    expect(alert).to_contain_text("Rate limit reached (RPM)")
    expect(alert).to_contain_text("requests per minute")
    retry = alert.get_by_role("button", name="Retry")
    expect(retry).to_be_visible()
    expect(alert).to_contain_text("Retry possible in")
    expect(retry).to_be_disabled()
    screenshot(page, "chat-error-429")
    expect(retry).to_be_enabled(timeout=8000)

    retry.click()
    # The failed answer is replaced by a new attempt (which meets the same fault again).
    expect(page.locator(f'article[data-message-id="{answer.get_attribute("data-message-id")}"]')).to_have_count(0)
    expect(page.locator('article[data-role="assistant"]')).to_have_count(1)
    expect(page.locator('article[data-role="assistant"]').last).to_have_attribute("data-status", "error", timeout=DONE)


def test_a_stream_cut_midway_keeps_the_partial_answer_and_offers_retry(open_chat):
    page = open_chat()
    answer = send(page, "Write 300 words about lakes [fault:drop-after-5]")
    expect(answer).to_have_attribute("data-status", "error", timeout=DONE)
    alert = answer.get_by_role("alert")
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
    expect(page.get_by_label("thinking_budget")).to_be_visible()
    expect(page.get_by_label("thinking_budget")).to_have_value("4096")
    expect(page.get_by_label("temperature")).to_be_visible()
    screenshot(page, "chat-panel-reasoner")

    page.get_by_label("Model", exact=True).select_option("local/chat")
    expect(page.get_by_label("thinking_budget")).to_have_count(0)
    expect(page.get_by_label("temperature")).to_be_visible()
    # The switch is saved: a reload shows the same model.
    page.wait_for_timeout(600)
    page.reload()
    expect(page.get_by_label("Model", exact=True)).to_have_value("local/chat")
    expect(page.get_by_label("thinking_budget")).to_have_count(0)


def test_an_invalid_parameter_is_named_with_its_limit(open_chat):
    page = open_chat("local/reasoner")
    page.get_by_label("thinking_budget").fill("50")
    page.get_by_label("thinking_budget").press("Tab")
    expect(page.locator("#panel")).to_contain_text("thinking_budget: must be at least 128")


def test_the_request_tab_shows_the_exact_body_without_the_key(open_chat, live_server):
    page = open_chat("local/chat", system_prompt="Be brief.")
    page.get_by_role("textbox", name="Message").fill("Draft question")
    page.get_by_role("tab", name="Request").click()
    preview = page.locator("#request-preview")
    expect(preview).to_contain_text('"model": "local/chat"')
    expect(preview).to_contain_text("Be brief.")
    expect(preview).to_contain_text("Draft question")
    assert live_server.api_key not in preview.inner_text()


def test_a_narrow_screen_turns_the_panes_into_drawers(open_chat):
    page = open_chat()
    page.set_viewport_size({"width": 390, "height": 800})
    expect(page.locator("#conversation-drawer")).to_be_hidden()
    expect(page.locator("#chat-panel")).to_be_hidden()
    send(page, "What is 2 + 2?")
    expect(page.locator('article[data-role="assistant"]').last).to_have_attribute("data-status", "complete", timeout=DONE)
    screenshot(page, "chat-phone")
    page.get_by_role("button", name="Show conversations").click()
    expect(page.locator("#conversation-drawer")).to_be_visible()
    screenshot(page, "chat-phone-drawer")
