"""Editing a share link in Chromium: the same URL opens with the new title; the list says created, updated, views
and watching now. Writes the share page and the edit-link form's screenshots."""

import pytest
from playwright.sync_api import expect

from playground.chat.models import Conversation, Message
from playground.sharing.freeze import freeze
from playground.sharing.models import Share
from tests.browser.conftest import orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def _shared(open_chat):
    page = open_chat(params={"temperature": 0.4})
    conversation = orm(Conversation.objects.get)

    def make():
        question = Message.objects.create(
            conversation=conversation, role="user", content="What is the area of a circle?"
        )
        Message.objects.create(
            conversation=conversation,
            parent=question,
            role="assistant",
            content="The area is $A = \\pi r^2$, where $r$ is the radius.",
            model_id="local/chat",
            params={"temperature": 0.4},
        )
        share = Share.objects.create(owner=conversation.owner, source=conversation, title="t")
        share.set_expiry("1d")
        share.save()
        freeze(share)
        return share

    return page, orm(make)


def test_an_owner_edits_a_link_and_the_same_url_shows_it(open_chat, browser, live_server):
    owner, share = _shared(open_chat)
    owner.goto("/shared/")
    row = owner.locator(f"#share-{share.pk}")
    expect(row.locator('td[data-label="Views"]')).to_have_text("0")
    expect(row.locator('td[data-label="Created"] time')).to_be_visible()
    row.get_by_role("link", name="Edit").click()
    expect(owner.get_by_role("heading", name="Edit link")).to_be_visible()
    owner.get_by_label("Title").fill("Circles, explained")
    owner.get_by_label("Expires").select_option("30d")
    owner.set_viewport_size({"width": 1440, "height": 900})
    screenshot(owner, "sharing-edit-1440")
    owner.set_viewport_size({"width": 390, "height": 844})
    screenshot(owner, "sharing-edit-390")
    owner.set_viewport_size({"width": 1440, "height": 900})
    owner.get_by_role("button", name="Save").click()
    expect(owner.get_by_role("heading", name="Shared links")).to_be_visible()
    expect(owner.locator(f"#share-{share.pk}")).to_contain_text("Circles, explained")
    saved = orm(Share.objects.get, pk=share.pk)
    assert saved.token == share.token and saved.titled and (saved.expires - share.expires).days >= 28

    viewer_context = browser.new_context(base_url=live_server.url, viewport={"width": 1440, "height": 900})
    try:
        viewer = viewer_context.new_page()
        viewer.goto(f"/s/{share.token}/")
        expect(viewer.get_by_role("heading", level=1)).to_have_text("Circles, explained")
        screenshot(viewer, "sharing-view-1440")
        viewer.set_viewport_size({"width": 390, "height": 844})
        screenshot(viewer, "sharing-view-390")
    finally:
        viewer_context.close()
    owner.goto("/shared/")
    expect(owner.locator(f"#share-{share.pk}").locator('td[data-label="Views"]')).to_have_text("1")


@pytest.mark.parametrize("width", [1440, 390])
def test_changing_only_the_title_keeps_never_and_changing_only_who_keeps_one_hour(alice_page, alice, width):
    """Issue 37.1: the edit form opens on "Keep as it is", so a link that never expires stays so after a new title,
    and a 1-hour link keeps its hour after a new visibility (it was extended to 7 days)."""
    conversation = orm(Conversation.objects.create, owner=alice, title="Tides", model_id="local/chat")

    def make(expiry):
        share = Share.objects.create(owner=alice, source=conversation, title="Tides")
        share.set_expiry(expiry)
        share.save()
        freeze(share)
        return share

    never, hour = orm(make, "never"), orm(make, "1h")
    page = alice_page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"/shared/links/{never.pk}/edit/")
    expect(page.get_by_label("Expires")).to_have_value("keep")
    expect(page.get_by_label("Expires").locator("option:checked")).to_have_text("Keep as it is (never expires)")
    screenshot(page, f"sharing-edit-keep-{width}")
    page.get_by_label("Title").fill("Tides, renamed")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Shared links")).to_be_visible()
    saved = orm(Share.objects.get, pk=never.pk)
    assert saved.title == "Tides, renamed" and saved.expires is None and saved.visibility == never.visibility

    page.goto(f"/shared/links/{hour.pk}/edit/")
    expect(page.get_by_label("Expires")).to_have_value("keep")
    page.get_by_label("Signed-in users of this playground").check()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Shared links")).to_be_visible()
    saved = orm(Share.objects.get, pk=hour.pk)
    assert saved.visibility == Share.SIGNED_IN and saved.title == "Tides" and saved.expires == hour.expires
