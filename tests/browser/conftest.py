"""Playwright on Debian's Chromium against the live daphne server.

Without /usr/bin/chromium the browser tests skip with a loud notice, except under CI=true where that is a failure.

Sync Playwright marks its event loop as running in this thread for as long as it is started, and Django rightly
refuses sync ORM calls there. So Playwright starts per test (after the test database is set up, and stops before
it is flushed), and the tests' own database work goes through `orm()`, which runs it in a thread of its own.
"""

import os
import re
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.db import connections
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from playground.chat.models import Attachment, Conversation
from playground.connections.models import ensure_local_connection
from tests.browser import axe
from tests.conftest import CI_LANE, PASSWORD

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

_orm_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="browser-test-orm")


def orm(function, *args, **kwargs):
    """Call `function` in the ORM thread and return its result (its exceptions are raised here).

    The thread closes its database connections after each call, so the flush at the end of the test is not kept
    waiting. The live server's test data is committed (transactional tests), so both threads see the same rows.
    """

    def call():
        try:
            return function(*args, **kwargs)
        finally:
            connections.close_all()

    return _orm_thread.submit(call).result()


def orm_eventually(function, predicate, timeout: float = 10.0):
    """`orm(function)` until `predicate` holds of its result (a save the page makes in the background); the last
    result either way, so the test's own assertion names what was wrong."""
    deadline = time.monotonic() + timeout
    while True:
        result = orm(function)
        if predicate(result) or time.monotonic() > deadline:
            return result
        time.sleep(0.1)


@pytest.fixture(scope="session")
def chromium():
    if not Path(CHROMIUM).exists():
        message = f"BROWSER TESTS SKIPPED: {CHROMIUM} is missing (run `make test` as root to install it)."
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        warnings.warn(message, stacklevel=1)
        pytest.skip(message)
    return CHROMIUM


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item):
    errors = getattr(item, "funcargs", {}).get("script_errors")
    if errors is not None:
        errors.listening = False


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.call_failed = report.failed
    return report


def check_open_pages(request, contexts) -> None:
    """axe on every page the test left open, as it left it: a new violation fails the test (in its teardown).
    Skipped when the test itself failed (its own error says more), under the `no_axe` marker, and on CI's
    PostgreSQL lane for a test that runs on the SQLite lane too (axe_on_this_lane)."""
    if getattr(request.node, "call_failed", True) or request.node.get_closest_marker("no_axe"):
        return
    if not axe_on_this_lane(request.node):
        return
    problems = []
    for context in contexts:
        for page in context.pages:
            if page.is_closed() or not page.url.startswith("http"):
                continue
            found = settled(page, axe.violations)
            if found:
                problems.append(axe.describe(found, page.url))
    assert not problems, "\n\n".join(problems)


def axe_on_this_lane(node) -> bool:
    """The pages a browser test leaves open are the same markup on either database and channel layer (the templates
    and the local API's setting make it, not the rows' storage), so CI checks them with axe on one lane: the SQLite
    lane (its LOCAL_API=off run too, where the pages differ), not the PostgreSQL lane, which is the longer one. These
    checks were about a fifth of a lane's 11 minutes of browser tests. A test that runs only in some configurations
    (a skipif marker: today the two-process test, PostgreSQL + Redis only) keeps them on every lane. The walk over
    every main page (test_accessibility.py) is a test of its own and runs on both lanes."""
    if CI_LANE != "postgresql":
        return True
    return any(mark.name == "skipif" for mark in node.iter_markers())


def settled(page, check):
    """`check(page)` on the document the page has once it is loaded: a navigation the test started just before it
    ended (a reload, a redirect) destroys the context mid-check, and the check runs again on the new document."""
    for attempt in range(3):
        page.wait_for_load_state("load")
        try:
            return check(page)
        except PlaywrightError as error:
            if "Execution context was destroyed" not in str(error) or attempt == 2:
                raise


class ScriptErrors:
    """The console errors of the app's own scripts (anything served under /static/) and the uncaught errors of
    every page of every context the test opens: any of them fails the test (in its teardown), except what the
    test's `console_errors` marker allows (the patterns of what it provokes on purpose)."""

    def __init__(self):
        self.seen: list[str] = []
        self.listening = True  # until the test's body ends: closing its pages aborts requests, which htmx logs

    def note(self, error: str) -> None:
        if self.listening:
            self.seen.append(error)

    def watch_browser(self, browser) -> None:
        new_context, new_page = browser.new_context, browser.new_page

        def watched_context(*args, **kwargs):
            context = new_context(*args, **kwargs)
            self.watch_context(context)
            return context

        def watched_page(*args, **kwargs):
            page = new_page(*args, **kwargs)
            self.watch_page(page)
            return page

        browser.new_context, browser.new_page = watched_context, watched_page

    def watch_context(self, context) -> None:
        context.on("page", self.watch_page)

    def watch_page(self, page) -> None:
        page.on("console", lambda message: self.console(page, message))
        page.on("pageerror", lambda error: self.note(f"uncaught {error.name}: {error.message} on {page.url}"))

    def console(self, page, message) -> None:
        if message.type != "error":
            return
        where = message.location or {}
        if not urlsplit(where.get("url", "")).path.startswith("/static/"):
            return
        self.note(f"{message.text} ({where.get('url')}:{where.get('lineNumber')}) on {page.url}")

    def check(self, request) -> None:
        if getattr(request.node, "call_failed", True):
            return
        allowed = [re.compile(pattern) for mark in request.node.iter_markers("console_errors") for pattern in mark.args]
        errors = [error for error in self.seen if not any(pattern.search(error) for pattern in allowed)]
        assert not errors, "the app's scripts logged errors:\n" + "\n".join(errors)


@pytest.fixture
def script_errors():
    return ScriptErrors()


class Chromium:
    """One Chromium for the browser tests (launching one costs a second or two; a context, which isolates cookies,
    storage and cache, a fraction of that), launched again if a test lost it."""

    def __init__(self, playwright, executable: str):
        self.playwright, self.executable, self.browser = playwright, executable, None

    def get(self):
        if self.browser is None or not self.browser.is_connected():
            self.browser = self.playwright.chromium.launch(executable_path=self.executable, headless=True, args=ARGS)
        return self.browser


@pytest.fixture(scope="package")
def launched(chromium):
    from playwright.sync_api import sync_playwright

    # Sync Playwright keeps its event loop marked as running in this thread for as long as it is started, so Django
    # would take every test's own database setup and flush, between tests, for calls from async code. The tests of
    # this package are sync (their ORM calls go through `orm`, in a thread); the servers they start keep the check
    # (server_env drops this variable).
    unsafe = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            shared = Chromium(playwright, chromium)
            yield shared
            if shared.browser is not None and shared.browser.is_connected():
                shared.browser.close()
    finally:
        if unsafe is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = unsafe


@pytest.fixture
def browser(launched, transactional_db, request, script_errors):
    """The shared Chromium, as this test's: what the test opens in it is checked (axe, script errors) and closed."""
    browser = launched.get()
    before = set(browser.contexts)
    script_errors.watch_browser(browser)
    try:
        yield browser
        check_open_pages(request, [context for context in browser.contexts if context not in before])
        script_errors.check(request)
    finally:
        for attribute in ("new_context", "new_page"):
            browser.__dict__.pop(attribute, None)  # watch_browser's wrappers, this test's own
        for context in browser.contexts:
            if context not in before:
                context.close()


@pytest.fixture
def context(browser, live_server, request):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 860})
    context.set_default_timeout(15_000)
    yield context
    try:
        check_open_pages(request, [context])
    finally:
        context.close()


@pytest.fixture
def page(context):
    return context.new_page()


@pytest.fixture
def alice(django_user_model):
    return orm(django_user_model.objects.create_user, "alice", "alice@example.com", PASSWORD)


@pytest.fixture
def bob(django_user_model):
    return orm(django_user_model.objects.create_user, "bob", "bob@example.com", PASSWORD)


@pytest.fixture
def catalog(transactional_db):
    orm(call_command, "seed_catalog", verbosity=0)


def log_in(context, client, user) -> None:
    """Give the browser the session of `user` (the live server shares the test database)."""
    orm(client.force_login, user)
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
    orm(call_command, "seed_catalog", verbosity=0)

    def open_(model_id="local/chat", **fields):
        conversation = orm(
            lambda: Conversation.objects.create(
                owner=alice, connection=ensure_local_connection(alice), model_id=model_id, **fields
            )
        )
        alice_page.goto(f"/c/{conversation.pk}/")
        expect(alice_page.get_by_role("textbox", name="Message")).to_be_visible()
        # The websocket must be up before sending, or the first deltas arrive by snapshot only. The consumer joins
        # the conversation's group before it accepts, so once the page's socket is open no delta can pass it by
        # (a fixed 300 ms wait here cost every chat test that long).
        alice_page.wait_for_function("() => window.ChatClient !== undefined && window.ChatClient.connected()")
        return alice_page

    yield open_
    # The server saved the files under the shared MEDIA_ROOT: remove exactly those.
    for name in orm(lambda: list(Attachment.objects.values_list("file", flat=True))):
        default_storage.delete(name)


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    try:
        page.screenshot(path=str(path), full_page=False)
    except PlaywrightError as error:
        # A renderer starved of CPU (both CI lanes and their browsers on 2 cores) can miss a capture once.
        if "Unable to capture screenshot" not in str(error):
            raise
        page.wait_for_timeout(500)
        page.screenshot(path=str(path), full_page=False)
    return path
