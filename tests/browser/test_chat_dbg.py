import pytest
from playwright.sync_api import expect
from tests.browser.test_chat import open_chat, send, DONE  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_dbg(open_chat):
    page = open_chat()
    log = []
    page.on("console", lambda m: log.append(("console", m.text)))
    page.on("response", lambda r: log.append(("resp", r.url, r.status)))
    answer = send(page, "Hello there [fault:429-rpm]")
    expect(answer).to_have_attribute("data-status", "error", timeout=DONE)
    retry = answer.get_by_role("button", name="Retry")
    expect(retry).to_be_enabled(timeout=8000)
    retry.click()
    page.wait_for_timeout(3000)
    print(page.locator("#thread").inner_html()[:3000])
    for entry in log:
        print(entry)
