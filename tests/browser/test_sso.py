"""Single sign-on in Chromium, against the fake provider: one click on "Sign in with Fake IdP" lands a new person in
the team their group names, where they chat on the team connection; without the group at the provider, their next
sign-in takes them out of the team. Then the administration page at desktop and phone width."""

import re

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.test import Client
from playwright.sync_api import expect

from playground.catalog.services import refresh_models
from playground.chat.models import Message
from playground.connections.models import Connection
from playground.devserver import free_port
from playground.operators.models import AuditEvent
from playground.teams.models import OWNER, Membership, Team
from tests.browser.conftest import log_in, orm, screenshot
from tests.conftest import LOCAL_API_TEST_KEY, PASSWORD, start_server, stop_server
from tests.fakeidp import server as fakeidp
from tests.fakeidp.server import CLIENT_ID, CLIENT_SECRET, Person

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

DONE = 60_000
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def idp():
    provider = fakeidp.start(free_port())
    yield provider
    fakeidp.stop(provider)


@pytest.fixture
def sso_server(idp, live_server, tmp_path):
    """A playground configured for the fake provider: accounts from single sign-on only, ml-demo → Demos."""
    port = free_port()
    process = start_server(
        port,
        tmp_path / "sso-server.log",
        PLAYGROUND_OIDC_ISSUER=idp.issuer,
        PLAYGROUND_OIDC_CLIENT_ID=CLIENT_ID,
        PLAYGROUND_OIDC_CLIENT_SECRET=CLIENT_SECRET,
        PLAYGROUND_OIDC_NAME="Fake IdP",
        PLAYGROUND_OIDC_GROUP_TEAMS="ml-demo=Demos:member",
        PLAYGROUND_SIGNUP="sso",
        PLAYGROUND_LOCAL_LOGIN="superusers",
    )
    yield f"http://127.0.0.1:{port}"
    stop_server(process)


def demos_with_a_connection(owner, api_url) -> Connection:
    team = Team.objects.create(name="Demos")
    Membership.objects.create(team=team, user=owner, role=OWNER)
    connection = Connection(owner=owner, team=team, name="Demos gateway", base_url=api_url)
    connection.set_key(LOCAL_API_TEST_KEY)
    connection.save()
    async_to_sync(refresh_models)(connection)
    return connection


def test_one_click_sign_in_lands_in_the_groups_team_chats_on_its_connection_and_leaves_with_the_group(
    browser, idp, sso_server, live_server, alice, catalog
):
    connection = orm(demos_with_a_connection, alice, live_server.api_url)
    idp.person = Person(sub="dana-0001", email="dana@example.com", groups=["ml-demo"], name="Dana")
    context = browser.new_context(base_url=sso_server, viewport={"width": 1280, "height": 860})
    context.set_default_timeout(15_000)
    page = context.new_page()

    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    expect(page.get_by_text("Administrators only: sign in with a password below.")).to_be_visible()
    expect(page.get_by_role("link", name="Sign up")).to_have_count(0)
    screenshot(page, "sso-login-1280")
    page.get_by_role("link", name="Sign in with Fake IdP").click()
    expect(page.locator(".usermenu summary")).to_contain_text("dana")
    # An account of the provider has no password here to change, at desktop and phone width.
    for size in ({"width": 1440, "height": 900}, PHONE):
        page.set_viewport_size(size)
        page.locator(".usermenu summary").click()
        expect(page.locator(".usermenu .menu").get_by_role("link", name="Shared links")).to_be_visible()
        expect(page.get_by_role("link", name="Change password")).to_have_count(0)
        page.locator(".usermenu summary").click()
    page.set_viewport_size({"width": 1280, "height": 860})
    dana = orm(get_user_model().objects.get, username="dana")
    assert orm(lambda: list(Membership.objects.filter(user=dana).values_list("team__name", "role"))) == [
        ("Demos", "member")
    ]

    page.goto("/teams/")
    expect(page.locator("main")).to_contain_text("Demos")
    page.goto("/")
    page.get_by_role("link", name="New chat").first.click()
    page.get_by_label("Connection").select_option(label="Demos gateway (team Demos)")
    expect(page.get_by_label("Model", exact=True)).to_have_value("local/chat")
    box = page.get_by_role("textbox", name="Message")
    box.fill("Write 20 words about signing in once")
    box.press("Enter")
    page.wait_for_url("**/c/*/")
    expect(page.locator(".message-assistant").last).to_have_attribute("data-status", "complete", timeout=DONE)
    screenshot(page, "sso-team-chat-1280")
    answer = orm(lambda: Message.objects.select_related("conversation").get(role="assistant"))
    assert answer.conversation.owner_id == dana.pk and answer.conversation.connection_id == connection.pk

    # The group is taken away at the provider: the next sign-in takes dana out of Demos.
    idp.person.groups = []
    page.locator(".usermenu summary").click()
    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    page.get_by_role("link", name="Sign in with Fake IdP").click()
    expect(page.locator(".usermenu summary")).to_contain_text("dana")
    assert not orm(lambda: Membership.objects.filter(user=dana).exists())
    page.goto(f"/c/{answer.conversation_id}/")
    expect(page.locator("main")).to_contain_text("You are no longer a member of Demos")
    context.close()


def test_the_administration_page_at_desktop_and_phone_width_deactivates_with_one_confirmed_click(
    browser, live_server, alice, bob, django_user_model
):
    root = orm(django_user_model.objects.create_superuser, "root", "root@example.com", PASSWORD)
    orm(lambda: Membership.objects.create(team=Team.objects.create(name="Demos"), user=alice, role=OWNER))
    for size, name in (({"width": 1440, "height": 900}, "administration-1440"), (PHONE, "administration-phone")):
        context = browser.new_context(base_url=live_server.url, viewport=size)
        log_in(context, Client(), root)
        page = context.new_page()
        page.goto("/")
        page.locator(".usermenu summary").click()
        page.get_by_role("link", name="Administration").click()
        expect(page.locator("#accounts")).to_contain_text("alice")
        # The click waits for the new page's document only: its stylesheet (the phone's stacked table) may still be
        # on its way on a loaded machine, and the width is measured once it applies.
        page.wait_for_load_state("load")
        width = page.evaluate("document.scrollingElement.scrollWidth")
        assert width <= size["width"], f"the page is {width}px wide at {size['width']}px"
        screenshot(page, name)
        context.close()

    context = browser.new_context(base_url=live_server.url, viewport=PHONE)
    log_in(context, Client(), root)
    page = context.new_page()
    page.goto("/operators/users/")
    page.on("dialog", lambda dialog: dialog.accept())
    page.locator(f"#account-{bob.pk}").get_by_role("button", name="Deactivate").click()
    expect(page.locator(".flash")).to_contain_text("bob deactivated by root")
    expect(page.locator(f"#account-{bob.pk}")).to_contain_text("deactivated")
    expect(page.locator("#audit")).to_contain_text("bob deactivated by root")
    assert orm(lambda: AuditEvent.objects.get().action) == "deactivated"
    screenshot(page, "administration-deactivated-phone")
    context.close()
