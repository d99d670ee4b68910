"""Issue 37 item 13: a message holding a NUL character is refused once, in the composer, in words that name the field
as the page does (Message), and the composer stays in view with the message kept: on a new chat (the form's POST)
and in a conversation (the socket's send), at desktop and phone widths."""

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

WORDS = "Message: NUL characters (\\u0000) are not allowed."


@pytest.mark.parametrize("width", [1440, 390])
@pytest.mark.parametrize("where", ["new chat", "conversation"])
def test_a_nul_character_is_refused_once_and_the_composer_stays_in_view(open_chat, where, width):
    page = open_chat()
    page.set_viewport_size({"width": width, "height": 844})
    if where == "new chat":
        page.goto("/")
    box = page.get_by_role("textbox", name="Message")
    box.fill("hello\x00world")
    box.press("Enter")

    alert = page.get_by_role("alert").filter(has_text="NUL characters")
    expect(alert).to_have_count(1)
    expect(alert).to_contain_text(WORDS)
    expect(alert).not_to_contain_text("content:")
    expect(page.locator(".flash")).to_have_count(0)
    expect(page.get_by_text("Could not send")).to_have_count(0)
    expect(alert).to_be_in_viewport()
    composer = page.locator("#composer")
    bottom = composer.evaluate("e => e.getBoundingClientRect().bottom")
    assert bottom <= 844, f"the composer ends at {bottom}px, below the fold (844px)"
    expect(page.get_by_role("button", name="Send")).to_be_in_viewport()
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    expect(box).to_have_value("hello\x00world")
    assert page.locator('article[data-role="user"]').count() == 0
    screenshot(page, f"composer-nul-{where.replace(' ', '-')}-{width}")

    box.fill("hello world")  # fixed, it goes
    box.press("Enter")
    expect(page.locator('article[data-role="user"]').last).to_contain_text("hello world")
    expect(alert).to_have_count(0)
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_have_attribute("data-status", "complete", timeout=60_000)
