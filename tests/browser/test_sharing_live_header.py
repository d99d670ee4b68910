"""A live viewer's header stays true while new turns come in (issue 37, item 10): its message count follows the
thread, at desktop and phone width."""

import pytest
from playwright.sync_api import expect

from playground.chat.models import Conversation
from playground.sharing.freeze import freeze
from playground.sharing.models import Share
from tests.browser.conftest import orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

DONE = 60_000


def send(page, text: str) -> None:
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")
    expect(page.locator('article[data-role="user"]').last).to_contain_text(text)
    expect(page.locator('article[data-role="assistant"]').last).to_have_attribute(
        "data-status", "complete", timeout=DONE
    )


def live_share(conversation_pk, owner) -> Share:
    share = Share(owner=owner, title="Rivers", live=True)
    share.source = Conversation.objects.get(pk=conversation_pk)
    share.save()
    freeze(share)
    return share


@pytest.mark.parametrize("width", [1440, 390])
def test_a_live_viewers_message_count_follows_the_new_turns(open_chat, context, alice, width):
    page = open_chat()
    send(page, "Write 5 words about rivers")
    conversation_pk = int(page.locator("#thread").get_attribute("data-conversation"))
    share = orm(live_share, conversation_pk, alice)

    viewer = context.new_page()
    viewer.set_viewport_size({"width": width, "height": 860})
    viewer.goto(f"/s/{share.token}/")
    viewer.wait_for_function("() => document.getElementById('share-thread').dataset.live === 'open'")
    header = viewer.locator(".share-header")
    expect(header).to_contain_text("2 messages")

    box = page.get_by_role("textbox", name="Message")
    box.fill("Write 300 words about tides")
    box.press("Enter")
    # While the answer streams in on the viewer's page, its header already counts the new turn.
    answer = viewer.locator(".message-assistant").nth(1)
    expect(answer).to_have_attribute("data-status", "streaming")
    expect(header).to_contain_text("4 messages")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(header).to_contain_text("4 messages")
    width_now = viewer.evaluate("document.scrollingElement.scrollWidth")
    assert width_now <= width, f"the viewer's page is {width_now}px wide at {width}px"
    screenshot(viewer, f"sharing-live-header-{width}")
