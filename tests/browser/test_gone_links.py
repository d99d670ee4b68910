"""A share link that expired or was revoked, and an invite that was used, show a page in the site's layout that
says so, with a way home, at desktop and phone widths."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from playground.chat.models import Conversation
from playground.connections.models import ensure_local_connection
from playground.sharing.freeze import freeze
from playground.sharing.models import Share
from playground.teams.models import OWNER, Invite, Membership, Team
from tests.browser.conftest import orm, screenshot
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}


def expired_share(alice) -> str:
    conversation = Conversation.objects.create(owner=alice, connection=ensure_local_connection(alice))
    share = Share(owner=alice, title="t", source=conversation)
    share.expires = timezone.now() - timedelta(minutes=1)
    share.save()
    return share.token


def used_invite(alice) -> str:
    team = Team.objects.create(name="Research")
    Membership.objects.create(team=team, user=alice, role=OWNER)
    return Invite.objects.create(team=team, expires=timezone.now() + timedelta(days=1), max_uses=1, uses=1).token


@pytest.mark.parametrize("size", SIZES)
def test_gone_links_say_why_in_the_sites_layout(browser, live_server, client, alice, bob, catalog, size):
    from tests.browser.conftest import log_in

    token = orm(expired_share, alice)
    invite = orm(used_invite, alice)
    context = browser.new_context(base_url=live_server.url, viewport=SIZES[size])
    page = context.new_page()

    response = page.goto(f"/s/{token}/")
    assert response.status == 410
    expect(page.get_by_role("heading", name="This link expired")).to_be_visible()
    expect(page.get_by_role("link", name="Sign in")).to_be_visible()
    screenshot(page, f"gone-share-expired-{size}")

    response = page.goto("/s/" + "A" * 32 + "/")
    assert response.status == 404
    expect(page.get_by_role("heading", name="Link not found")).to_be_visible()

    log_in(context, client, bob)
    response = page.goto(f"/teams/join/{invite}/")
    assert response.status == 410
    expect(page.get_by_role("alert")).to_contain_text("This invite link was already used")
    screenshot(page, f"gone-invite-used-{size}")
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1]
    context.close()


@pytest.mark.parametrize("size", SIZES)
def test_a_signed_in_only_link_asks_an_anonymous_visitor_to_sign_in_and_opens_after(
    browser, live_server, alice, bob, catalog, size
):
    """Issue 37.9: the page says the link needs signing in; its Sign in comes back to the link."""

    def make():
        conversation = Conversation.objects.create(
            owner=alice, title="Tide tables", connection=ensure_local_connection(alice)
        )
        share = Share.objects.create(
            owner=alice,
            source=conversation,
            title="Tide tables",
            visibility=Share.SIGNED_IN,
        )
        freeze(share)
        return share.token

    token = orm(make)
    context = browser.new_context(base_url=live_server.url, viewport=SIZES[size])
    page = context.new_page()
    page.goto(f"/s/{token}/")
    expect(page.get_by_role("heading", name="Sign in to open this link")).to_be_visible()
    expect(page.get_by_role("alert")).to_contain_text("signed-in users of this playground only")
    screenshot(page, f"gone-share-sign-in-{size}")
    page.get_by_role("link", name="Sign in").click()
    page.get_by_label("Username").fill("bob")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{live_server.url}/s/{token}/")
    expect(page.get_by_role("heading", name="Tide tables", level=1)).to_be_visible()
    context.close()
