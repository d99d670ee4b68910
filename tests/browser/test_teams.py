"""Teams in Chromium: the owner creates a team and a team connection and makes an invite link; a second user
joins by the link and chats with the team key; the owner sees the member's usage. Then the pages at phone size."""

import re

import pytest
from django.test import Client
from playwright.sync_api import expect

from playground.chat.models import Message
from playground.teams.models import Team, UsageRecord
from tests.browser.conftest import log_in, orm, screenshot
from tests.conftest import LOCAL_API_TEST_KEY

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

DONE = 60_000
PHONE = {"width": 390, "height": 844}


def body_of(response) -> bytes:
    """A response's body; redirects and aborted requests have none."""
    try:
        return response.body()
    except Exception:  # Playwright raises a plain Error
        return b""


def test_owner_invites_a_member_who_chats_with_the_team_key_and_the_owner_sees_the_usage(
    alice_page, browser, live_server, client, bob, catalog
):
    page = alice_page
    page.goto("/teams/")
    page.get_by_label("Name").fill("Research")
    page.get_by_role("button", name="Create team").click()
    expect(page.get_by_role("heading", name=re.compile("^Research"))).to_be_visible()
    team = orm(Team.objects.get)

    page.get_by_role("link", name="Add team connection").click()
    page.get_by_label("Name").fill("Team gateway")
    page.get_by_label("Base URL").fill(live_server.api_url)
    page.get_by_label("API key").fill(LOCAL_API_TEST_KEY)
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#team-connections")).to_contain_text("Team gateway")

    page.get_by_label("Can be used by").select_option("single")
    page.get_by_role("button", name="Make invite link").click()
    link = page.locator(".invite-link").first.inner_text()
    assert link.startswith(live_server.url + "/teams/join/")
    screenshot(page, "teams-owner-1280")

    member_context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 860})
    member_context.set_default_timeout(15_000)
    try:
        log_in(member_context, Client(), bob)  # a client of its own: logging bob in on alice's would end hers
        member = member_context.new_page()
        seen = []
        member.on("response", lambda r: seen.append(r))
        member.goto(link)
        member.get_by_role("button", name="Join the team").click()
        expect(member.locator("#members")).to_contain_text("bob")

        # A new chat on the team connection, picked on the start page, then the first message.
        member.goto("/")
        member.get_by_role("link", name="New chat").first.click()
        member.get_by_label("Connection").select_option(label="Team gateway (team Research)")
        expect(member.get_by_label("Model", exact=True)).to_have_value("local/chat")
        box = member.get_by_role("textbox", name="Message")
        box.fill("Write 40 words about the team")
        box.press("Enter")
        member.wait_for_url("**/c/*/")
        answer = member.locator(".message-assistant").last
        expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
        screenshot(member, "teams-member-chat-1280")
        message = orm(lambda: Message.objects.select_related("conversation__connection").get(role="assistant"))
        assert message.conversation.connection.team_id == team.pk
        # Nothing the member's browser received holds the key.
        bodies = [body_of(response) for response in seen]
        assert len(bodies) > 10 and not [
            r.url for r, b in zip(seen, bodies, strict=True) if LOCAL_API_TEST_KEY.encode() in b
        ]
    finally:
        member_context.close()

    row = orm(lambda: UsageRecord.objects.get(team=team))
    assert row.username == "bob" and row.prompt_tokens == message.usage["prompt_tokens"]
    page.goto(f"/teams/{team.pk}/usage/")
    members = page.locator("#usage-members")
    expect(members).to_contain_text("bob")
    expect(members).to_contain_text(f"{row.prompt_tokens + row.completion_tokens:,}")
    expect(page.locator("#usage-models")).to_contain_text("local/chat")
    screenshot(page, "teams-usage-1280")

    page.set_viewport_size(PHONE)
    for path, name in [(f"/teams/{team.pk}/usage/", "usage"), (f"/teams/{team.pk}/", "detail"), ("/teams/", "index")]:
        page.goto(path)
        widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1], f"{path} scrolls sideways: {widths}"
        screenshot(page, f"teams-{name}-390")
