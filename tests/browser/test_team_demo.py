"""From defaults (no allowed upstream hosts, no key typed anywhere): a new user signs up, creates a team, adds the
built-in connection in one click and makes an invite link; a second new user signs up from that link, joins and
gets an answer on the team's connection."""

import re

import pytest
from playwright.sync_api import expect

from playground.chat.models import Message
from tests.browser.conftest import orm

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

PASSWORD = "a-team-demo-passphrase-42"


def sign_up(page, username: str) -> None:
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password confirmation").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()


def test_a_new_user_makes_a_team_demo_that_a_second_new_user_chats_in(browser, live_server):
    owner_context = browser.new_context(base_url=live_server.url)
    member_context = browser.new_context(base_url=live_server.url)
    try:
        owner = owner_context.new_page()
        owner.goto("/accounts/signup/")
        sign_up(owner, "ada")
        owner.get_by_role("navigation", name="Main").get_by_role("link", name="Teams").click()
        owner.get_by_label("Name").fill("Demo team")
        owner.get_by_role("button", name="Create team").click()
        expect(owner.get_by_role("heading", level=1)).to_contain_text("Demo team")
        owner.get_by_role("button", name="Add the built-in connection").click()
        expect(owner.locator("#team-connections")).to_contain_text("Built-in (local API)")
        owner.get_by_role("button", name="Make invite link").click()
        link = owner.locator(".invite-link").first.inner_text()

        member = member_context.new_page()
        member.goto(link)
        expect(member).to_have_url(re.compile(r"/accounts/login/\?next="))
        member.get_by_role("link", name="Sign up").click()
        sign_up(member, "ben")
        member.get_by_role("button", name="Join the team").click()
        expect(member.locator("#members")).to_contain_text("ben")
        member.goto("/")
        member.get_by_label("Connection").select_option(label="Built-in (local API) (team Demo team)")
        expect(member.get_by_label("Model", exact=True)).to_have_value("local/chat")
        box = member.get_by_role("textbox", name="Message")
        box.fill("Write 30 words about teamwork")
        box.press("Enter")
        member.wait_for_url("**/c/*/")
        answer = member.locator(".message-assistant").last
        expect(answer).to_have_attribute("data-status", "complete", timeout=60_000)
        expect(answer.locator(".message-body")).not_to_be_empty()
        message = orm(lambda: Message.objects.select_related("conversation__connection__team").get(role="assistant"))
        assert message.conversation.connection.team.name == "Demo team"
        assert message.conversation.connection.is_local
    finally:
        member_context.close()
        owner_context.close()
