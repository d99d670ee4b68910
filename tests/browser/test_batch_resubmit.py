"""Issue 37 item 7: a forked batch's "Submit again" has its connection beside it, starting on the last used one; when
the team connection is refused, the row says so and another connection is chosen right there, at desktop and phone
widths."""

import pytest
from playwright.sync_api import expect

from tests.batches.test_resubmit import fork_of, spent_team_connection
from tests.browser.conftest import orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


@pytest.mark.parametrize("width", [1440, 390])
def test_a_refused_submit_again_chooses_another_connection_in_its_row(alice_page, alice, live_server, width):
    team = orm(spent_team_connection, alice)
    fork = orm(fork_of, alice, team)
    page = alice_page
    page.set_viewport_size({"width": width, "height": 844})
    page.goto("/batches/")
    row = page.locator(f"#batch-{fork.pk}")
    picker = row.get_by_label("Connection")
    expect(picker).to_have_value(str(team.pk))  # the last used: the fork went onto the team's
    expect(picker.locator("option")).to_have_count(2)

    row.get_by_role("button", name="Submit again").click()
    row = page.locator(f"#batch-{fork.pk}")
    alert = row.get_by_role("alert")
    expect(alert).to_contain_text("Not sent through the team connection")
    expect(alert).to_contain_text("Choose another connection")
    expect(alert).to_be_in_viewport()  # the page comes back on the row, not on the form at its top
    picker = row.get_by_label("Connection")
    expect(picker).to_have_value(str(team.pk))
    expect(picker).to_be_in_viewport()
    expect(row.get_by_role("button", name="Submit again")).to_be_in_viewport()
    overflow = page.evaluate("document.scrollingElement.scrollWidth")
    assert overflow <= width, f"the page is {overflow}px wide at {width}px"
    screenshot(page, f"batch-resubmit-refused-{width}")

    picker.select_option(label="Local")
    row.get_by_role("button", name="Submit again").click()
    expect(page.get_by_text("created with 2 requests")).to_have_count(1)
    again = page.locator("#batch-list .batch").first
    expect(again).not_to_have_id(f"batch-{fork.pk}")
    expect(again).to_be_in_viewport()
    expect(again.locator(".where")).to_contain_text("Local")
    expect(again.get_by_label("Status")).to_have_text("completed", timeout=30_000)
