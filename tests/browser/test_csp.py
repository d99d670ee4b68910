"""Under the Content-Security-Policy every page works in Chromium and reports no violation."""

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from playground.chat.models import Conversation
from playground.connections.models import Connection, ensure_local_connection
from tests.browser.conftest import orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def watch_violations(page) -> list[str]:
    violations = []
    page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
    return violations


def test_pages_chat_and_handlers_work_without_violations(alice, alice_page, live_server):
    orm(call_command, "seed_catalog", verbosity=0)
    page = alice_page
    violations = watch_violations(page)
    for path in ("/", "/connections/", "/rerank/", "/speech/", "/speech/voices/", "/batches/"):
        page.goto(path)
        expect(page.locator("main")).to_be_visible()
    # The theme script (no longer inline) still applies and toggles the theme.
    page.click("#theme-toggle")
    theme = page.evaluate("document.documentElement.dataset.theme")
    page.reload()
    assert page.evaluate("document.documentElement.dataset.theme") == theme
    # Chat streams over the websocket under connect-src 'self'.
    conversation = orm(lambda: Conversation.objects.create(owner=alice, connection=ensure_local_connection(alice)))
    page.goto(f"/c/{conversation.pk}/")
    page.wait_for_function("() => window.ChatClient !== undefined")
    page.wait_for_timeout(300)
    box = page.get_by_role("textbox", name="Message")
    box.fill("what is 2 + 3?")
    box.press("Enter")
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_have_attribute("data-status", "complete", timeout=60_000)
    # data-confirm replaced onsubmit: dismissing the question keeps the connection.
    hosted = Connection(owner=alice, name="Doomed", base_url="http://127.0.0.1:9/v1")
    hosted.set_key("sk-doomed-0000")
    orm(hosted.save)
    page.goto("/connections/")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.locator(f'form[action="/connections/{hosted.pk}/delete/"] button').click()
    page.wait_for_timeout(300)
    assert orm(Connection.objects.filter(pk=hosted.pk).exists)
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator(f'form[action="/connections/{hosted.pk}/delete/"] button').click()
    page.wait_for_url("**/connections/")
    assert not orm(Connection.objects.filter(pk=hosted.pk).exists)
    screenshot(page, "csp-connections-desktop")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/speech/voices/")
    screenshot(page, "csp-voices-phone")
    assert violations == []
