"""Compare sends the composer's attachments to every column whose model takes them, and says which cannot."""

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot
from tests.browser.test_chat_attachments import DONE, choose, png_file  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def test_a_compared_question_takes_its_picture_to_the_vision_column_and_names_the_other(open_chat, png_file):  # noqa: F811
    page = open_chat("local/vision")
    choose(page, png_file)
    page.get_by_role("textbox", name="Message").fill("What is in this picture?")
    page.locator("#compare-setup > summary").click()
    page.get_by_label("Model of column 1").select_option("local/vision")
    page.get_by_label("Model of column 2").select_option("local/chat")
    page.locator("#compare-button").click()

    columns = page.locator(".compare-grid article[data-role='assistant']")
    expect(columns).to_have_count(2)
    question = page.locator('article[data-role="user"]').last
    expect(question.get_by_role("img", name="blue-64x48.png")).to_be_visible()
    expect(page.locator("#composer")).to_contain_text(
        "Column 2: 1 attachment is not sent: local/chat does not accept images."
    )
    expect(page.get_by_role("list", name="Files to send")).to_be_hidden()
    for index in range(2):
        expect(columns.nth(index)).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(columns.nth(0).locator(".message-body")).to_contain_text("64×48 px PNG")
    expect(columns.nth(1).locator(".message-body")).not_to_contain_text("64×48 px PNG")
    screenshot(page, "compare-attachments")
