"""The suite's guard (ScriptErrors in conftest.py) hears the uncaught errors of every page and the console errors of
the app's own scripts, and leaves alone what a test logs from its own evaluate()."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.console_errors("provoked on purpose")
def test_the_guard_hears_an_uncaught_error_and_a_tests_marker_allows_it(page, live_server, script_errors):
    page.goto("/accounts/login/")
    page.evaluate("console.error('logged by the test, not by the app')")
    with page.expect_event("pageerror"):
        page.evaluate("setTimeout(() => { throw new Error('provoked on purpose') })")
    assert len(script_errors.seen) == 1 and "provoked on purpose" in script_errors.seen[0]
    assert "/accounts/login/" in script_errors.seen[0]


def test_the_guard_hears_pages_of_contexts_the_test_opens_itself(browser, live_server, script_errors):
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.goto("/accounts/login/")
    with page.expect_event("pageerror"):
        page.evaluate("setTimeout(() => { throw new Error('in a context of its own') })")
    assert "in a context of its own" in script_errors.seen[0]
    script_errors.seen.clear()  # heard: the test passes
    context.close()
