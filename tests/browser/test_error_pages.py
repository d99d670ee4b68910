"""Issue 37.5: a signed-in 404 (a deleted conversation, an evaluation that is not yours) and an anonymous one are
pages of the site, in words, with a way back, at desktop and phone widths. Writes their screenshots."""

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1440, 390])
def test_a_404_is_a_page_of_the_site_with_a_way_back(alice_page, browser, live_server, width):
    page = alice_page
    page.set_viewport_size({"width": width, "height": 900})
    for path in ("/c/999999/", "/evaluate/99999/"):
        response = page.goto(path)
        assert response.status == 404
        expect(page.get_by_role("heading", name="Page not found", level=1)).to_be_visible()
        expect(page.get_by_text("There is nothing at this address")).to_be_visible()
        expect(page.get_by_role("banner")).to_be_visible()
    screenshot(page, f"error-404-signed-in-{width}")
    page.get_by_role("link", name="Back to the playground").click()
    expect(page.get_by_role("textbox", name="Message")).to_be_visible()

    anonymous = browser.new_context(base_url=live_server.url, viewport={"width": width, "height": 900})
    try:
        visitor = anonymous.new_page()
        assert visitor.goto("/no-such-page/").status == 404
        expect(visitor.get_by_role("heading", name="Page not found", level=1)).to_be_visible()
        screenshot(visitor, f"error-404-anonymous-{width}")
        visitor.get_by_role("link", name="Sign in").click()
        expect(visitor.get_by_role("heading", name="Log in")).to_be_visible()
    finally:
        anonymous.close()
