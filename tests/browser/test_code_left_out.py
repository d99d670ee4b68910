"""Issue 37 item 12: the View code of a conversation longer than a request's 10 messages, and a shared answer's Request
JSON, say which turns they leave out, at desktop and phone widths."""

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from playground.sharing.freeze import freeze
from playground.sharing.models import Share
from tests.browser.conftest import orm, screenshot
from tests.sharing.test_code_left_out import long_conversation

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def shared(conversation) -> str:
    share = Share(owner=conversation.owner, title="Rivers")
    share.source = conversation
    share.save()
    freeze(share)
    return share.token


@pytest.mark.parametrize("width", [1440, 390])
def test_view_code_and_a_shared_request_say_which_turns_they_leave_out(alice_page, alice, catalog, width):
    conversation = orm(long_conversation, alice)
    page = alice_page
    page.set_viewport_size({"width": width, "height": 844})
    page.goto(reverse("sharing:code", args=["conversation", conversation.pk]))
    note = page.get_by_text("Not in this request:")
    expect(note).to_be_visible()
    expect(note).to_contain_text("3 of 13 messages, your next one included (#1 user “Question 1 about rivers”")
    expect(note).to_be_in_viewport()
    code = page.locator(".code-panel:not([hidden]) pre")
    expect(code).to_contain_text("Question 3 about rivers")
    expect(code).not_to_contain_text("Question 1 about rivers")
    overflow = page.evaluate("document.scrollingElement.scrollWidth")
    assert overflow <= width, f"the code page is {overflow}px wide at {width}px"
    screenshot(page, f"code-left-out-{width}")

    token = orm(shared, conversation)
    page.goto(f"/s/{token}/")
    last = page.locator(".share-request").last
    last.locator("summary").click()
    said = last.get_by_text("Not in this request:")
    expect(said).to_be_visible()
    expect(said).to_contain_text("1 of the thread's 11 messages (#1 user “Question 1 about rivers”)")
    overflow = page.evaluate("document.scrollingElement.scrollWidth")
    assert overflow <= width, f"the shared page is {overflow}px wide at {width}px"
    screenshot(page, f"shared-request-left-out-{width}")
