"""Chat details a newcomer meets: each test failed before its fix."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import orm

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def slider_of(page, name: str):
    return (
        page.locator("#chat-panel")
        .get_by_label(name, exact=True)
        .locator("xpath=following-sibling::input[@type='range']")
    )


def test_an_unset_parameter_s_slider_sits_at_its_default(open_chat):
    page = open_chat("local/chat")
    expect(page.get_by_label("n", exact=True)).to_have_value("")
    expect(slider_of(page, "n")).to_have_value("1")
    expect(slider_of(page, "frequency_penalty")).to_have_value("0")
    # Set, it follows the box; cleared, it goes back to the default.
    page.locator("#chat-panel").get_by_label("frequency_penalty", exact=True).fill("1.5")
    expect(slider_of(page, "frequency_penalty")).to_have_value("1.5")
    page.locator("#chat-panel").get_by_label("frequency_penalty", exact=True).fill("")
    expect(slider_of(page, "frequency_penalty")).to_have_value("0")


def test_a_model_without_tools_says_where_to_switch_them_on(open_chat):
    page = open_chat("local/chat")
    page.get_by_role("tab", name="Tools").click()
    hint = page.get_by_role("tabpanel", name="Tools")
    expect(hint).to_contain_text("does not list tool calling for local/chat")
    hint.get_by_role("link", name="switch tools on in its model page").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("local/chat")


def test_parallel_calls_of_one_function_have_result_boxes_told_apart(open_chat, alice):
    from playground.chat.models import Conversation, Message

    def answered_with_two_calls():
        conversation = Conversation.objects.get(owner=alice)
        question = Message.objects.create(conversation=conversation, role="user", content="Paris and Rome?")
        calls = [
            {
                "id": f"call_{city}",
                "type": "function",
                "function": {"name": "get_weather", "arguments": f'{{"city": "{city}"}}'},
            }
            for city in ("paris", "rome")
        ]
        Message.objects.create(
            conversation=conversation, role="assistant", parent=question, status="complete", tool_calls=calls
        )

    page = open_chat("local/tools")
    orm(answered_with_two_calls)
    page.reload()
    answer = page.locator(".message-assistant").last
    expect(answer.get_by_label("Result of get_weather, call 1 of 2")).to_be_visible()
    expect(answer.get_by_label("Result of get_weather, call 2 of 2")).to_be_visible()
    expect(answer.get_by_label("Arguments of get_weather, call 2 of 2")).to_contain_text("rome")


def test_a_new_chat_takes_a_system_prompt_and_parameters_before_its_first_message(alice_page, catalog):
    from playground.chat.models import Conversation

    page = alice_page
    page.goto("/")
    page.get_by_label("Model", exact=True).select_option("local/reasoner")
    # The panel follows the model picked (its parameters), keeping what was typed.
    expect(page.get_by_label("thinking_budget")).to_be_visible()
    page.get_by_label("System prompt").fill("Answer like a pirate.")
    page.get_by_label("Model", exact=True).select_option("local/chat")
    expect(page.get_by_label("thinking_budget")).to_have_count(0)
    expect(page.get_by_label("System prompt")).to_have_value("Answer like a pirate.")
    page.get_by_label("temperature", exact=True).fill("0.3")
    box = page.get_by_role("textbox", name="Message")
    box.fill("Write 10 words about ships")
    box.press("Enter")
    page.wait_for_url("**/c/*/")
    expect(page.locator(".message-assistant").last).to_have_attribute("data-status", "complete", timeout=60_000)
    conversation = orm(Conversation.objects.get)
    assert conversation.system_prompt == "Answer like a pirate."
    assert conversation.params.get("temperature") == 0.3
    expect(page.get_by_label("System prompt")).to_have_value("Answer like a pirate.")


def test_the_first_message_of_a_new_chat_pushes_the_address_without_a_reload(alice_page, catalog):
    page = alice_page
    page.goto("/")
    page.evaluate("window.samePage = true")
    box = page.get_by_role("textbox", name="Message")
    box.fill("Write 60 words about lighthouses")
    box.press("Enter")
    page.wait_for_url("**/c/*/")
    answer = page.locator(".message-assistant").last
    expect(answer).to_have_attribute("data-status", "complete", timeout=60_000)
    assert page.evaluate("window.samePage") is True, "the page reloaded"
    # The page is the conversation's now: its toolbar, panel and composer work.
    expect(page.get_by_role("tab", name="Parameters")).to_be_visible()
    expect(page.get_by_text("Share", exact=True)).to_be_visible()
    expect(page.locator("#conversation-list, .conversation-list").first).to_contain_text("Write 60 words")
    page.get_by_role("textbox", name="Message").fill("And 10 more words")
    page.get_by_role("textbox", name="Message").press("Enter")
    expect(page.locator(".message-assistant")).to_have_count(2)
    expect(page.locator(".message-assistant").last).to_have_attribute("data-status", "complete", timeout=60_000)
    assert page.evaluate("window.samePage") is True
    page.go_back()
    expect(page).to_have_url(re.compile(r"/$"))
    # Back to the start page reloads it (start.js): the new document is the one the test leaves open.
    page.wait_for_function("window.samePage === undefined")
    page.wait_for_load_state("load")
