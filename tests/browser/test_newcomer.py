"""A newcomer's path: signing up from a shared link's "Fork into my account" comes back to the fork."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import orm
from tests.browser.test_chat import send

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

PASSWORD = "a-newcomer-passphrase-42"


def share_a_conversation(page) -> str:
    """alice's answered conversation, shared with anyone; the link's path."""
    answer = send(page, "Write 20 words about tea")
    expect(answer).to_have_attribute("data-status", "complete", timeout=60_000)
    page.get_by_text("Share", exact=True).click()
    page.get_by_role("link", name="Share link…").click()
    page.get_by_role("button", name="Create link").click()
    return page.locator("a[href^='/s/']").first.get_attribute("href")


def test_signing_up_from_fork_comes_back_to_the_fork(open_chat, browser, live_server):
    link = share_a_conversation(open_chat())
    stranger = browser.new_context(base_url=live_server.url)
    try:
        page = stranger.new_page()
        page.goto(link.rstrip("/") + "/fork/")
        expect(page).to_have_url(re.compile(r"/accounts/login/\?next="))
        page.get_by_role("link", name="Sign up").click()
        page.get_by_label("Username").fill("newcomer")
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        page.get_by_label("Password confirmation").fill(PASSWORD)
        page.get_by_role("button", name="Sign up").click()
        expect(page).to_have_url(re.compile(re.escape(link.rstrip("/")) + "/fork/$"))
        page.get_by_role("button", name=re.compile("Fork")).click()
        expect(page).to_have_url(re.compile(r"/c/\d+/$"))
        expect(page.locator(".message-assistant")).to_have_count(1)
    finally:
        stranger.close()


def test_a_rotated_local_key_is_shown_once_and_view_code_fills_it_in(open_chat):
    from playground.connections.models import Connection

    page = open_chat()
    conversation = page.url
    page.goto("/connections/")
    page.get_by_role("link", name="Rotate key").click()
    page.get_by_role("button", name="Rotate key").click()
    key = page.get_by_test_id("new-key").inner_text()
    assert key == orm(lambda: Connection.objects.get(is_local=True).get_key())
    page.get_by_role("link", name="Done").click()
    expect(page.locator("main")).not_to_contain_text(key)
    page.goto(conversation.rstrip("/").replace("/c/", "/code/conversation/") + "/")
    expect(page.locator("#api-key-line")).to_have_text(f"export PLAYGROUND_API_KEY={key}")


def test_the_empty_start_page_walks_a_new_user_through_to_a_first_answer(alice_page, catalog):
    page = alice_page
    page.goto("/")
    tour = page.get_by_role("region", name="Welcome to the playground")
    for part in ("Rerank", "Speech", "Batches", "Evaluate", "Teams", "Connections"):
        expect(tour.get_by_role("link", name=part, exact=True)).to_be_visible()
    tour.get_by_role("button", name="Ask a first question").click()
    page.wait_for_url("**/c/*/")
    expect(page.locator(".message-assistant").last).to_have_attribute("data-status", "complete", timeout=60_000)
    page.goto("/")
    expect(page.get_by_role("region", name="Welcome to the playground")).to_have_count(0)


# (The voices page always lists the built-in voices.)
EMPTY_LISTS = ["/", "/rerank/", "/speech/", "/batches/", "/evaluate/", "/teams/", "/shared/"]


def test_every_empty_list_says_what_it_is_for_and_offers_one_action(alice_page, catalog):
    page = alice_page
    for url in EMPTY_LISTS:
        page.goto(url)
        empty = page.locator(".empty").filter(has=page.locator("a"))
        assert empty.count() >= 1, f"{url}: no empty state with an action"
        for index in range(empty.count()):
            state = empty.nth(index)
            assert state.locator("a").count() == 1, f"{url}: {state.inner_text()}"
            assert ": " in state.inner_text(), f"{url}: one sentence saying what the list is for: {state.inner_text()}"
