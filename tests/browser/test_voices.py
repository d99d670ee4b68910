"""The voices page in Chromium."""

import pytest

from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def test_the_voices_page_lists_voices_and_previews_one(live_server, catalog, alice_page):
    page = alice_page
    page.goto("/speech/voices/")
    rows = page.locator("#voice-table tbody tr")
    assert rows.count() == 3
    uri = rows.nth(0).get_attribute("data-uri")
    assert uri.startswith("speech:narrator:")
    rows.nth(0).locator("text=Preview").click()
    page.wait_for_selector("#preview-1 audio")
    page.wait_for_function("() => document.querySelector('#preview-1 audio').currentTime > 0", timeout=20_000)
    screenshot(page, "voices-light")
    page.emulate_media(color_scheme="dark")
    screenshot(page, "voices-dark")
    rows.nth(0).locator("text=Use in speech form").click()
    page.wait_for_selector("#id_voice")
    assert page.input_value("#id_voice") == uri
