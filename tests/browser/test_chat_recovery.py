"""The server dies mid-answer under an open tab: the tab says the connection is lost, reconnects on its own once
a server is back on the same port, and the answer the dead process left turns interrupted at once."""

import re
import time

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from playground import devserver
from playground.chat.models import Conversation, Message
from playground.connections.models import ensure_local_connection
from tests.browser.conftest import log_in, orm, screenshot
from tests.browser.test_chat import send
from tests.conftest import free_port, server_env
from tests.waiting import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

# The heartbeat sweep is set to ten minutes: only the tab's snapshot request can end the answer in time.
ENV = {"PLAYGROUND_STALE_SECONDS": "600", "LOCAL_API_TOKEN_RATE": "40"}


@pytest.fixture
def own_server(tmp_path):
    """start() runs a daphne on the test database, on the same port every time; all are stopped at the end."""
    port = free_port()
    started = []

    def start():
        process = devserver.start_daphne(port, server_env(port, **ENV), log=tmp_path / "daphne.log")
        started.append(process)
        return process

    yield port, start
    devserver.stop(*(p for p in started if p.poll() is None))


@pytest.mark.console_errors(r"ERR_CONNECTION_REFUSED")  # the server is stopped on purpose: the socket retries
def test_a_stopped_server_is_announced_and_the_tab_recovers(browser, client, alice, own_server):
    port, start = own_server
    first = start()
    orm(call_command, "seed_catalog", verbosity=0)
    conversation = orm(
        lambda: Conversation.objects.create(
            owner=alice, connection=ensure_local_connection(alice), model_id="local/chat"
        )
    )
    context = browser.new_context(base_url=f"http://127.0.0.1:{port}", viewport={"width": 1280, "height": 860})
    context.set_default_timeout(15_000)
    try:
        log_in(context, client, alice)
        page = context.new_page()
        page.goto(f"/c/{conversation.pk}/")
        page.wait_for_function("() => window.ChatClient !== undefined && window.ChatClient.connected()")
        answer = send(page, "write 3000 words about lighthouses")
        page.wait_for_function(
            "node => node.innerText.length > 100", arg=answer.locator(".message-body").element_handle()
        )
        banner = page.locator("#connection-banner")
        expect(banner).to_be_hidden()

        # Killed once it flushed part of the answer (every second): that part is what an interrupted answer keeps.
        pk = answer.get_attribute("data-message-id")
        wait_for(lambda: orm(lambda: Message.objects.get(pk=pk).content), timeout=30, what="a flushed partial answer")
        first.kill()
        first.wait()
        expect(banner).to_be_visible()
        expect(banner).to_contain_text("reconnecting")
        expect(page.locator("#chat-announcer")).to_have_text("Connection lost, reconnecting.")
        expect(page.get_by_role("button", name="Reconnect now")).to_be_visible()
        assert answer.get_attribute("data-status") == "streaming"
        screenshot(page, "chat-connection-lost")
        page.set_viewport_size({"width": 390, "height": 844})
        screenshot(page, "chat-connection-lost-phone")
        page.set_viewport_size({"width": 1280, "height": 860})

        start()
        # The button skips the backoff's wait (the tab may have come back by itself already).
        page.evaluate("() => document.querySelector('[data-reconnect-now]').click()")
        page.wait_for_function("() => window.ChatClient.connected()", timeout=20_000)
        reconnected = time.monotonic()
        expect(answer).to_have_attribute("data-status", "interrupted", timeout=5_000)
        assert time.monotonic() - reconnected < 2.5
        expect(page.locator("#connection-banner")).to_contain_text("Reconnected")
        expect(page.locator("#chat-announcer")).to_have_text(re.compile("Reconnected.|Answer interrupted."))
        expect(answer.locator(".message-notice")).to_contain_text("Interrupted")
        expect(answer.locator(".message-meta")).to_contain_text("estimated")
        expect(page.get_by_role("button", name="Stop")).to_be_disabled()
        expect(page.get_by_role("button", name="Send")).to_be_enabled()
        assert orm(lambda: Message.objects.get(pk=pk).status) == "interrupted"
        screenshot(page, "chat-recovered")
        expect(page.locator("#connection-banner")).to_be_hidden(timeout=5_000)
    finally:
        context.close()
