"""n = 2 in Chromium: both choices stream into tabs, the second renders as markdown while it arrives, and
"Continue with this one" makes it the thread's answer (persisted)."""

import pytest
from playwright.sync_api import expect

from playground.chat.models import Message
from tests.browser.conftest import orm, screenshot
from tests.browser.test_chat import DONE, send

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

FIRST = "First answer with **bold** " + " ".join(f"alpha{i}" for i in range(120))
SECOND = "Second answer with *slanted* words " + " ".join(f"beta{i}" for i in range(300))


def test_two_choices_stream_into_tabs_and_one_can_continue_the_thread(open_chat):
    page = open_chat()
    page.get_by_label("n", exact=True).fill("2")
    page.get_by_label("n", exact=True).press("Tab")
    expect(page.locator("#panel")).to_contain_text("Saved")
    answer = send(page, f"Two please [say:{FIRST}] [say:{SECOND}]")
    tab = answer.get_by_role("tab", name="Choice 2")
    expect(tab).to_be_visible()
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true")
    panel = answer.locator("#" + tab.get_attribute("aria-controls"))
    expect(panel).to_be_visible()
    # The second choice streams into its tab, rendered as markdown, before the answer is complete.
    page.wait_for_function(
        "node => node.dataset.status === 'streaming' && node.querySelector('.choice-panel em') !== null",
        arg=answer.element_handle(),
        timeout=DONE,
    )
    expect(panel.locator("em")).to_have_text("slanted")
    expect(answer.locator(".message-body")).to_be_hidden()
    screenshot(page, "chat-choices-streaming")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "chat-choices-streaming-phone")
    page.set_viewport_size({"width": 1280, "height": 860})

    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    # The final render keeps the tab that was open.
    expect(answer.get_by_role("tab", name="Choice 2")).to_have_attribute("aria-selected", "true")
    panel = answer.locator(".choice-panel")
    expect(panel).to_contain_text("beta299")
    answer.get_by_role("button", name="Side by side").click()
    expect(answer.locator(".message-body")).to_be_visible()
    expect(panel).to_be_visible()
    screenshot(page, "chat-choices-side-by-side")
    answer.get_by_role("button", name="Side by side").click()

    answer.get_by_role("button", name="Continue with this one").click()
    expect(answer.locator(".message-body")).to_contain_text("Second answer with slanted words")
    # The pick is now choice 1, the thread's answer: its tab is the one selected, showing the pick's text, and it
    # has the focus the swapped-out button had.
    first_tab = answer.get_by_role("tab", name="Choice 1")
    expect(first_tab).to_have_attribute("aria-selected", "true")
    expect(first_tab).to_be_focused()
    expect(answer.get_by_role("tabpanel")).to_have_count(1)
    expect(answer.get_by_role("tabpanel")).to_contain_text("Second answer with slanted words")
    pk = answer.get_attribute("data-message-id")
    message = orm(Message.objects.get, pk=pk)
    assert message.content.startswith("Second answer") and message.choices[0].startswith("First answer")

    page.reload()
    reloaded = page.locator(f"#message-{pk}")
    expect(reloaded.locator(".message-body")).to_contain_text("Second answer with slanted words")
    reloaded.get_by_role("tab", name="Choice 2").click()
    expect(reloaded.locator(".choice-panel strong")).to_have_text("bold")
