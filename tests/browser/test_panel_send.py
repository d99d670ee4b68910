"""What the panel shows when Send is pressed is what goes upstream (issue 37, item 11): the panel saves a change
150 ms after it, and a send in between waits for that save instead of going with the previous value."""

import pytest
from playwright.sync_api import expect

from playground.chat.models import Message
from tests.browser.conftest import orm

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

DONE = 60_000


def last_answer_params():
    return orm(lambda: Message.objects.filter(role="assistant").order_by("pk").last().params)


@pytest.mark.parametrize("width", [1440, 390])
def test_a_parameter_changed_and_sent_at_once_goes_with_the_new_value(open_chat, width):
    page = open_chat(params={"temperature": 0.4})
    page.set_viewport_size({"width": width, "height": 860})
    panel = page.locator("#chat-panel")
    if width < 1000:
        page.get_by_role("button", name="Settings", exact=True).click()
    temperature = panel.get_by_label("temperature", exact=True)
    expect(temperature).to_have_value("0.4")
    temperature.fill("1.3")
    if width < 1000:
        panel.get_by_role("button", name="Hide settings").click()
    box = page.get_by_role("textbox", name="Message")
    # No wait between the change and Enter: the save is still in its 150 ms delay.
    box.fill("Write 5 words about ships")
    box.press("Enter")
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    assert last_answer_params().get("temperature") == 1.3

    # A second change, by the slider this time, and at once the button.
    if width < 1000:
        page.get_by_role("button", name="Settings", exact=True).click()
    temperature.fill("0.7")
    if width < 1000:
        panel.get_by_role("button", name="Hide settings").click()
    box.fill("Write 5 words about tides")
    page.get_by_role("button", name="Send").click()
    expect(page.locator('article[data-role="assistant"]')).to_have_count(2)
    expect(page.locator('article[data-role="assistant"]').last).to_have_attribute(
        "data-status", "complete", timeout=DONE
    )
    assert last_answer_params().get("temperature") == 0.7


def test_a_refused_setting_keeps_the_message_and_says_why(open_chat):
    page = open_chat("local/reasoner")
    panel = page.locator("#chat-panel")
    panel.get_by_label("thinking_budget").fill("50")
    box = page.get_by_role("textbox", name="Message")
    box.fill("Write 5 words about ships")
    box.press("Enter")
    expect(page.locator("#composer")).to_contain_text("A setting in the panel has an error")
    expect(box).to_have_value("Write 5 words about ships")
    expect(page.locator('article[data-role="user"]')).to_have_count(0)
