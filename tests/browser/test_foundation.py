import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def test_sign_up_see_local_add_a_second_connection_and_test_it(page, live_server):
    page.goto("/accounts/signup/")
    page.get_by_label("Username").fill("dora")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password confirmation").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()
    expect(page).not_to_have_url(re.compile("signup"))

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Connections").click()
    local = page.locator(".connection", has_text="Local")
    expect(local).to_contain_text("/local/v1")
    local.get_by_role("button", name="Test connection").click()
    expect(local.get_by_role("status")).to_contain_text("Connected")

    page.get_by_role("link", name="Add connection").click()
    page.get_by_label("Name").fill("Second")
    page.get_by_label("Base URL").fill(live_server.api_url)
    page.get_by_label("API key").fill(live_server.api_key)
    screenshot(page, "connection-form")
    page.get_by_role("button", name="Save").click()

    # By its heading: the Local card's "(tested 5 seconds ago)" holds "second" too.
    second = page.locator(".connection").filter(has=page.get_by_role("heading", name="Second", exact=True))
    expect(second.get_by_test_id("masked-key")).to_have_text("sk-…" + live_server.api_key[-4:])
    assert live_server.api_key not in page.content()
    second.get_by_role("button", name="Test connection").click()
    expect(second.get_by_role("status")).to_contain_text("Connected")
    screenshot(page, "connections-light")
    page.get_by_role("button", name="Toggle dark mode").click()
    screenshot(page, "connections-dark")


def test_a_wrong_key_is_shown_as_rejected(page, live_server, alice_page):
    alice_page.goto("/connections/new/")
    alice_page.get_by_label("Name").fill("Broken")
    alice_page.get_by_label("Base URL").fill(live_server.api_url)
    alice_page.get_by_label("API key").fill("sk-not-a-real-key-9999")
    alice_page.get_by_role("button", name="Save").click()
    broken = alice_page.locator(".connection", has_text="Broken")
    broken.get_by_role("button", name="Test connection").click()
    expect(broken.get_by_role("status")).to_contain_text("Key rejected (401)")
