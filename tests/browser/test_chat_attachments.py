"""Attaching files in the chat composer, in Chromium against the live daphne server."""

import pytest
from PIL import Image
from playwright.sync_api import expect

from playground.chat.models import Message
from tests.browser.conftest import orm, screenshot

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


@pytest.mark.parametrize("width", [1440, 390])
def test_a_new_chats_first_attachment_is_not_sent_again_with_the_next_message(
    open_chat, alice_page, catalog, png_file, tmp_path, width
):
    """Issue 37, item 3: the start page becomes the conversation in place; the files its first message took along
    are not still waiting in the composer. (`open_chat` is not called: it removes the uploaded files after.)"""
    second = tmp_path / "red-32x32.png"
    Image.new("RGB", (32, 32), (220, 30, 30)).save(second, "PNG")
    page = alice_page
    page.set_viewport_size({"width": width, "height": 860})
    page.goto("/")
    page.get_by_label("Model", exact=True).select_option("local/vision")
    choose(page, png_file)
    box = page.get_by_role("textbox", name="Message")
    box.fill("What is in this picture?")
    box.press("Enter")
    page.wait_for_url("**/c/*/")
    expect(page.locator('article[data-role="assistant"]').last).to_have_attribute(
        "data-status", "complete", timeout=DONE
    )
    expect(page.get_by_role("list", name="Files to send")).to_be_hidden()

    choose(page, second)
    chips = page.get_by_role("list", name="Files to send").get_by_role("listitem")
    expect(chips).to_have_count(1)
    expect(chips).to_contain_text("red-32x32.png")
    box.fill("And this one?")
    box.press("Enter")
    question = page.locator('article[data-role="user"]').nth(1)
    expect(question.get_by_role("img", name="red-32x32.png")).to_be_visible()
    expect(question.get_by_role("img")).to_have_count(1)
    expect(page.locator('article[data-role="assistant"]').last).to_have_attribute(
        "data-status", "complete", timeout=DONE
    )
    messages = orm(
        lambda: [
            list(message.attachments.values_list("name", flat=True))
            for message in Message.objects.filter(role="user").order_by("pk")
        ]
    )
    assert messages == [["blue-64x48.png"], ["red-32x32.png"]]
