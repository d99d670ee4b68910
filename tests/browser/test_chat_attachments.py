"""Attaching files in the chat composer, in Chromium against the live daphne server."""

import pytest
from PIL import Image
from playwright.sync_api import expect

from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

DONE = 60_000


@pytest.fixture
def png_file(tmp_path):
    path = tmp_path / "blue-64x48.png"
    Image.new("RGB", (64, 48), (30, 60, 220)).save(path, "PNG")
    return path


def choose(page, *paths):
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Attach files").click()
    chooser.value.set_files([str(p) for p in paths])


def test_an_attached_png_is_shown_in_the_thread_and_described_by_the_vision_model(open_chat, png_file):
    page = open_chat("local/vision")
    choose(page, png_file)
    chip = page.get_by_role("list", name="Files to send").get_by_role("listitem")
    expect(chip).to_have_count(1)
    expect(chip).to_contain_text("blue-64x48.png")
    expect(chip).to_contain_text("KB")

    box = page.get_by_role("textbox", name="Message")
    box.fill("What is in this picture?")
    box.press("Enter")

    question = page.locator('article[data-role="user"]').last
    thumbnail = question.get_by_role("img", name="blue-64x48.png")
    expect(thumbnail).to_be_visible()
    page.wait_for_function("img => img.complete && img.naturalWidth === 64", arg=thumbnail.element_handle())
    # The chips are gone once the message is sent.
    expect(page.get_by_role("list", name="Files to send")).to_be_hidden()

    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(answer.locator(".message-body")).to_contain_text("64×48 px PNG")
    screenshot(page, "chat-attachments")

    # A reload shows the same thumbnail (served by the owner-checked view).
    page.reload()
    expect(page.locator('article[data-role="user"]').last.get_by_role("img", name="blue-64x48.png")).to_be_visible()


def test_a_chosen_file_can_be_removed_and_text_models_offer_no_attach_button(open_chat, png_file):
    page = open_chat("local/vision")
    choose(page, png_file, png_file)
    chips = page.get_by_role("list", name="Files to send").get_by_role("listitem")
    expect(chips).to_have_count(2)
    screenshot(page, "chat-attachments-chips")
    chips.first.get_by_role("button", name="Remove blue-64x48.png").click()
    expect(chips).to_have_count(1)

    # Switching to a text model hides the button; sending the chosen image then names the problem.
    page.get_by_label("Model", exact=True).select_option("local/chat")
    expect(page.get_by_role("button", name="Attach files")).to_be_hidden()
    page.wait_for_timeout(600)  # the panel saves the model choice
    box = page.get_by_role("textbox", name="Message")
    box.fill("And this?")
    box.press("Enter")
    expect(page.locator(".composer-errors")).to_contain_text(
        "attachments: local/chat does not accept images; choose a vision model."
    )
    expect(page.get_by_role("list", name="Files to send").get_by_role("listitem")).to_have_count(1)
    expect(box).to_have_value("And this?")
    expect(page.locator('article[data-role="user"]')).to_have_count(0)
