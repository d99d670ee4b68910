"""Playwright on Debian's Chromium against the live daphne server.

Without /usr/bin/chromium the browser tests skip with a loud notice, except under CI=true where that is a failure.
"""

import os
import warnings
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.core.management import call_command
from playwright.sync_api import expect

from playground.chat.models import Attachment, Conversation
from playground.connections.models import ensure_local_connection

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--autoplay-policy=no-user-gesture-required",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# Sync Playwright runs an event loop in this thread; the ORM calls of the tests themselves are still sync.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        message = f"BROWSER TESTS SKIPPED: {CHROMIUM} is missing (run `make test` as root to install it)."
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        warnings.warn(message, stacklevel=1)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def context(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 860})
    context.set_default_timeout(15_000)
    yield context
    context.close()


@pytest.fixture
def page(context):
    return context.new_page()


def log_in(context, client, user) -> None:
    """Give the browser the session of `user` (the live server shares the test database)."""
    client.force_login(user)
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "domain": "127.0.0.1", "path": "/"}]
    )


@pytest.fixture
def alice_page(context, client, alice):
    log_in(context, client, alice)
    return context.new_page()


@pytest.fixture
def open_chat(alice, alice_page, live_server):
    """Open a fresh conversation of alice on a model; returns the page. Files it uploads are removed after."""
    call_command("seed_catalog", verbosity=0)

    def open_(model_id="local/chat", **fields):
        conversation = Conversation.objects.create(
            owner=alice, connection=ensure_local_connection(alice), model_id=model_id, **fields
        )
        alice_page.goto(f"/c/{conversation.pk}/")
        expect(alice_page.get_by_role("textbox", name="Message")).to_be_visible()
        # The websocket must be up before sending, or the first deltas arrive by snapshot only.
        alice_page.wait_for_function("() => window.ChatClient !== undefined")
        alice_page.wait_for_timeout(300)
        return alice_page

    yield open_
    # The server saved the files under the shared MEDIA_ROOT: remove exactly those.
    for name in Attachment.objects.values_list("file", flat=True):
        default_storage.delete(name)


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path
