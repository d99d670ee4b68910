"""Tool round trips, the tools editor and the start page's first message, in Chromium."""

import json
import re

import pytest
from django.core.management import call_command
from PIL import Image
from playwright.sync_api import expect

from playground.chat.models import Conversation, Message
from playground.connections.models import ensure_local_connection
from tests.browser.conftest import orm, orm_eventually, screenshot
from tests.fakeprovider import server as fake
from tests.providers.conftest import fake_provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DONE = 60_000
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
CLOCK = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}


def send(page, text: str):
    answers = page.locator('article[data-role="assistant"]')
    before = answers.count()
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")
    expect(answers).to_have_count(before + 1)
    return answers.last


def ready(page) -> None:
    page.wait_for_function("() => window.ChatClient !== undefined")
    page.wait_for_timeout(300)


def roles(conversation_id) -> list:
    return orm(lambda: list(Message.objects.filter(conversation_id=conversation_id).values_list("role", flat=True)))


@pytest.mark.needs_local_api
def test_a_tool_call_is_answered_from_its_card_to_the_final_answer(open_chat):
    page = open_chat("local/tools", params={"tools": [WEATHER]})
    conversation_id = int(page.locator("#thread").get_attribute("data-conversation"))
    answer = send(page, "What's the weather in Paris?")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    card = answer.locator(".tool-card")
    expect(card).to_have_count(1)
    expect(card.locator(".tool-name")).to_have_text("get_weather")
    expect(card.locator(".tool-args")).to_contain_text('"city": "Paris"')
    call_id = card.get_attribute("data-call-id")
    expect(card.locator(".tool-id")).to_have_text(call_id)

    # Typing the result as a message is refused: the card is where it goes.
    page.get_by_role("textbox", name="Message").fill("18 C")
    page.get_by_role("textbox", name="Message").press("Enter")
    expect(page.locator(".composer-errors")).to_contain_text("The last answer called get_weather")
    assert roles(conversation_id) == ["user", "assistant"]
    page.get_by_role("textbox", name="Message").fill("")

    other = page.context.new_page()  # a second tab on the same conversation
    other.goto(page.url)
    ready(other)
    card.get_by_label("Result of get_weather").fill('{"temperature": 18, "unit": "celsius"}')
    screenshot(page, "chat-tool-call")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "chat-tool-call-phone")
    page.set_viewport_size({"width": 1280, "height": 860})
    answer.get_by_role("button", name="Send result").click()

    result = page.locator('article[data-role="tool"]')
    expect(result).to_have_count(1)
    expect(result).to_contain_text('{"temperature": 18, "unit": "celsius"}')
    expect(result).to_contain_text(call_id)
    expect(page.locator('article[data-role="assistant"]')).to_have_count(2)
    final = page.locator('article[data-role="assistant"]').last
    expect(final).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(final.locator(".message-body")).not_to_be_empty()
    # The card is answered: no result box any more.
    first = page.locator('article[data-role="assistant"]').first
    expect(first.locator(".tool-card .badge")).to_have_text("Answered")
    expect(first.locator("textarea")).to_have_count(0)
    assert roles(conversation_id) == ["user", "assistant", "tool", "assistant"]
    # The other tab got the tool message and the answer live.
    expect(other.locator('article[data-role="tool"]')).to_contain_text('{"temperature": 18, "unit": "celsius"}')
    expect(other.locator('article[data-role="assistant"]').last).to_have_attribute(
        "data-status", "complete", timeout=DONE
    )
    other.close()
    final_row = orm(lambda: Message.objects.filter(conversation_id=conversation_id, role="assistant").last())
    assert final_row.status == "complete" and final_row.content
    screenshot(page, "chat-tool-answered")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "chat-tool-answered-phone")


def test_parallel_calls_of_the_fake_are_answered_with_one_submit(alice, alice_page, live_server, catalog, fake_openai):
    connection = orm(fake_provider, alice, fake_openai).connection  # with its catalog (the tools model)
    conversation = orm(
        Conversation.objects.create,
        owner=alice,
        connection=connection,
        model_id=fake.TOOLS_MODEL,
        params={"tools": [WEATHER, CLOCK]},
    )
    page = alice_page
    page.goto(f"/c/{conversation.pk}/")
    ready(page)
    answer = send(page, "weather and time in Paris")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    cards = answer.locator(".tool-card")
    expect(cards).to_have_count(2)
    expect(cards.nth(1).locator(".tool-args")).to_contain_text('"attempt": 2')
    cards.nth(0).get_by_label("Result of get_weather").fill("18 C")
    answer.get_by_role("button", name="Send results").click()
    # One box left empty: the browser asks for it (the server refuses it in words too), nothing is sent.
    page.wait_for_timeout(300)
    assert answer.get_by_label("Result of get_time").evaluate("box => !box.validity.valid")
    expect(page.locator('article[data-role="tool"]')).to_have_count(0)
    expect(answer.get_by_label("Result of get_weather")).to_have_value("18 C")
    answer.get_by_label("Result of get_time").fill("14:05")
    answer.get_by_role("button", name="Send results").click()

    final = page.locator('article[data-role="assistant"]').last
    expect(page.locator('article[data-role="tool"]')).to_have_count(2)
    expect(final).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(final.locator(".message-body")).to_contain_text("The tool answered 14:05; that settles it.")
    sent = fake_openai.state.bodies("/chat/completions")[-1]
    ids = [call["id"] for call in sent["messages"][-3]["tool_calls"]]
    assert sent["messages"][-2:] == [
        {"role": "tool", "tool_call_id": ids[0], "content": "18 C"},
        {"role": "tool", "tool_call_id": ids[1], "content": "14:05"},
    ]


@pytest.mark.needs_local_api
# A save still in flight when the next edit saves is replaced (the panel's hx-sync="this:replace"), as on a loaded
# machine: htmx logs the abort.
@pytest.mark.console_errors(r"^htmx:sendAbort\b", r"^htmx:afterRequest\b")
def test_invalid_tools_json_stays_with_one_error_until_fixed(open_chat):
    page = open_chat("local/tools", params={"tools": [WEATHER]})
    page.get_by_role("tab", name="Tools").click()
    editor = page.get_by_role("textbox", name="tools")
    broken = '[\n  {"type": "function",\n   "function": {"name": "x"}\n'
    editor.fill(broken)
    error = page.locator("#tools-error")
    expect(error).to_have_text("tools: not valid JSON at line 4, column 1.")
    # A change saves the panel: the server keeps the text and says the same words, once.
    with page.expect_response(lambda response: "/settings/" in response.url):
        editor.press("Tab")
    expect(page.get_by_role("textbox", name="tools")).to_have_value(broken)
    expect(page.locator("#tools-error")).to_have_text("tools: not valid JSON at line 4, column 1.")
    expect(page.locator("#panel").get_by_text("not valid JSON")).to_have_count(1)
    screenshot(page, "chat-tools-invalid")

    # The builder adds a function once the JSON is fixed.
    page.get_by_role("textbox", name="tools").fill(json.dumps([WEATHER]))
    expect(error).to_be_hidden()
    page.get_by_text("Add a function").click()
    page.get_by_label("name", exact=True).fill("get_time")
    page.get_by_label("description").fill("The local time")
    # The builder saves the panel, whose answer replaces it: wait for that swap, or a later step may hold an
    # element the swap takes away.
    with page.expect_response(lambda response: "/settings/" in response.url):
        page.get_by_role("button", name="Add to tools").click()
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
    conversation_id = int(page.locator("#thread").get_attribute("data-conversation"))
    page.wait_for_function(
        "() => document.querySelector('#id_tools') && document.querySelector('#id_tools').value.includes('get_time')"
    )
    tools = orm_eventually(
        lambda: Conversation.objects.get(pk=conversation_id).params.get("tools", []), lambda tools: len(tools) == 2
    )
    assert [t["function"]["name"] for t in tools] == ["get_weather", "get_time"]
    assert tools[1]["function"]["description"] == "The local time"
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator(".chat-toolbar .panel-toggle").click()
    expect(page.get_by_role("textbox", name="tools")).to_be_visible()
    page.get_by_text("Add a function").scroll_into_view_if_needed()
    screenshot(page, "chat-tools-editor-phone")


@pytest.mark.needs_local_api
# The held save may be replaced by the builder's (the panel's hx-sync="this:replace"): htmx logs the abort.
@pytest.mark.console_errors(r"^htmx:sendAbort\b", r"^htmx:afterRequest\b")
def test_a_late_panel_answer_does_not_undo_a_function_added_meanwhile(open_chat):
    """The first save's answer comes back after a function was added: the panel keeps it, and it is saved."""
    page = open_chat("local/tools", params={"tools": [WEATHER]})
    conversation_id = int(page.locator("#thread").get_attribute("data-conversation"))
    page.get_by_role("tab", name="Tools").click()
    held = []
    page.route("**/settings/", lambda route: route.continue_() if held else held.append(route))
    page.get_by_role("textbox", name="tools").fill(json.dumps([WEATHER], indent=1))
    page.get_by_text("Add a function").click()  # the editor loses focus: its change saves the panel
    page.wait_for_function("() => document.querySelector('#tool-builder[open]') !== null")
    page.wait_for_timeout(300)
    assert len(held) == 1
    page.get_by_label("name", exact=True).fill("get_time")
    with page.expect_response(lambda response: "get_time" in (response.request.post_data or "")):
        page.get_by_role("button", name="Add to tools").click()
        held[0].continue_()  # the older answer arrives while the builder's save waits its turn
    expect(page.get_by_role("textbox", name="tools")).to_have_value(re.compile("get_time"))
    tools = orm_eventually(
        lambda: Conversation.objects.get(pk=conversation_id).params.get("tools", []), lambda tools: len(tools) == 2
    )
    assert [t["function"]["name"] for t in tools] == ["get_weather", "get_time"]


@pytest.mark.needs_local_api
def test_the_start_page_first_message_picks_the_model_and_carries_a_file(alice, alice_page, tmp_path):
    orm(call_command, "seed_catalog", verbosity=0)
    orm(ensure_local_connection, alice)
    image = tmp_path / "blue.png"
    Image.new("RGB", (64, 48), (30, 60, 220)).save(image, "PNG")
    page = alice_page
    page.goto("/")
    page.get_by_role("link", name="New chat").click()
    expect(page.get_by_role("textbox", name="Message")).to_be_visible()
    assert orm(lambda: Conversation.objects.filter(owner=alice).count()) == 0

    page.get_by_label("Model", exact=True).select_option("local/vision")
    expect(page.get_by_role("button", name="Attach files")).to_be_visible()
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Attach files").click()
    chooser.value.set_files(str(image))
    chip = page.get_by_role("list", name="Files to send").get_by_role("listitem")
    expect(chip).to_contain_text("blue.png")
    chip.get_by_label("detail of blue.png").select_option("low")
    screenshot(page, "chat-start")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "chat-start-phone")
    page.set_viewport_size({"width": 1280, "height": 860})

    page.get_by_role("textbox", name="Message").fill("What is in this picture?")
    page.get_by_role("textbox", name="Message").press("Enter")
    page.wait_for_url("**/c/*/")
    answer = page.locator('article[data-role="assistant"]')
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(answer.locator(".message-body")).to_contain_text("64×48 px PNG")
    expect(page.locator('article[data-role="user"]').get_by_role("img", name="blue.png")).to_be_visible()
    conversation = orm(lambda: Conversation.objects.get(owner=alice))
    assert conversation.model_id == "local/vision"
    options = orm(lambda: list(conversation.messages.get(role="user").attachments.values_list("options", flat=True)))
    assert options == [{"detail": "low"}]
    expect(page.get_by_label("Model", exact=True).locator("option:checked")).to_have_text("local/vision")

    # The next new chat starts with the model last used.
    page.get_by_role("link", name="New chat").click()
    expect(page.get_by_label("Model", exact=True).locator("option:checked")).to_have_text("local/vision")
    assert orm(lambda: Conversation.objects.filter(owner=alice).count()) == 1


@pytest.mark.needs_local_api
def test_a_video_chip_sets_fps_and_max_frams_for_its_part(open_chat, tmp_path):
    from tests.localapi.test_chat_media import mp4

    clip = tmp_path / "clip.mp4"
    clip.write_bytes(mp4(seconds=2))
    page = open_chat("local/omni")
    conversation_id = int(page.locator("#thread").get_attribute("data-conversation"))
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Attach files").click()
    chooser.value.set_files(str(clip))
    chip = page.get_by_role("list", name="Files to send").get_by_role("listitem")
    chip.get_by_label("fps of clip.mp4").fill("1")
    chip.get_by_label("max_frams of clip.mp4").fill("1")
    chip.get_by_label("detail of clip.mp4").select_option("low")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "chat-video-options-phone")
    page.set_viewport_size({"width": 1280, "height": 860})
    answer = send(page, "What happens in this video?")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    # The local model read one frame: the options reached it.
    expect(answer.locator(".message-body")).to_contain_text("1 frame")
    options = orm(
        lambda: list(
            Message.objects.get(conversation_id=conversation_id, role="user").attachments.values_list(
                "options", flat=True
            )
        )
    )
    assert options == [{"detail": "low", "fps": 1, "max_frams": 1}]
