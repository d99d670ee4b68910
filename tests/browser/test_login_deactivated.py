"""Issue 37 item 13: a deactivated account that gives its right password is told the account is deactivated (not
"wrong password"), at desktop and phone widths; a wrong password reads as any wrong password."""

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import orm, screenshot
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def deactivate(user) -> None:
    user.is_active = False
    user.save(update_fields=["is_active"])


@pytest.mark.parametrize("width", [1440, 390])
def test_a_deactivated_account_is_told_so_after_its_right_password(page, alice, width):
    orm(deactivate, alice)
    page.set_viewport_size({"width": width, "height": 844})
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    error = page.get_by_role("alert")
    expect(error).to_contain_text("This account was deactivated by an administrator")
    expect(error).not_to_contain_text("correct username and password")
    expect(error).to_be_in_viewport()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    width_now = page.evaluate("document.scrollingElement.scrollWidth")
    assert width_now <= width, f"the page is {width_now}px wide at {width}px"
    screenshot(page, f"login-deactivated-{width}")

    page.get_by_label("Password").fill("not-the-password")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("Please enter a correct username and password")
    expect(page.get_by_role("alert")).not_to_contain_text("deactivated")
