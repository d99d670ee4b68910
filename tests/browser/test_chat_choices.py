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


def seeded_choices(owner):
    """A finished answer with three choices, and a live link to its conversation (anyone with the link)."""
    from playground.chat.models import Conversation
    from playground.connections.models import ensure_local_connection
    from playground.sharing.freeze import freeze
    from playground.sharing.models import Share

    conversation = Conversation.objects.create(
        owner=owner, connection=ensure_local_connection(owner), model_id="local/chat", params={"n": 3}
    )
    Message.objects.create(conversation=conversation, role="user", content="Pick a colour")
    answer = Message.objects.create(
        conversation=conversation, role="assistant", content="Red.", choices=["Green.", "Blue."], params={"n": 3}
    )
    share = Share(owner=owner, title="Colours", live=True)
    share.source = conversation
    share.save()
    freeze(share)
    return conversation.pk, answer.pk, share.token


@pytest.mark.parametrize("width", [1440, 390])
def test_continue_with_this_one_shows_in_the_other_tabs_and_to_live_viewers(
    alice_page, alice, browser, live_server, width
):
    """Issue 32 item 4: the choice is a command announced to the conversation: another tab of the owner and a live
    viewer of its link show the new answer without a reload."""
    conversation_pk, answer_pk, token = orm(seeded_choices, alice)
    size = {"width": width, "height": 844}
    tabs = []
    for _ in range(2):
        tab = alice_page if not tabs else alice_page.context.new_page()
        tab.set_viewport_size(size)
        tab.goto(f"/c/{conversation_pk}/")
        tab.wait_for_function("() => window.ChatClient !== undefined")
        tabs.append(tab)
    viewer_context = browser.new_context(base_url=live_server.url, viewport=size)
    try:
        viewer = viewer_context.new_page()
        viewer.goto(f"/s/{token}/")
        viewer.wait_for_function("() => document.getElementById('share-thread').dataset.live === 'open'")
        expect(viewer.locator(f"#message-{answer_pk} .message-body")).to_contain_text("Red.")
        tabs[0].wait_for_timeout(300)  # both sockets up

        chooser = tabs[0].locator(f"#message-{answer_pk}")
        chooser.get_by_role("tab", name="Choice 3").click()
        chooser.get_by_role("button", name="Continue with this one").click()
        expect(chooser.locator(".message-body")).to_contain_text("Blue.")
        other = tabs[1].locator(f"#message-{answer_pk}")
        expect(other.locator(".message-body")).to_contain_text("Blue.")
        expect(other.get_by_role("tab", name="Choice 3")).to_be_visible()
        shown = viewer.locator(f"#message-{answer_pk} .message-body")
        expect(shown).to_contain_text("Blue.")
        expect(shown).not_to_contain_text("Red.")
        assert orm(lambda: Message.objects.get(pk=answer_pk).content) == "Blue."
        for page in (*tabs, viewer):
            overflow = page.evaluate("document.scrollingElement.scrollWidth")
            assert overflow <= width, f"{page.url} is {overflow}px wide at {width}px"
        screenshot(viewer, f"chat-choice-live-viewer-{width}")
    finally:
        viewer_context.close()
