"""Every page at phone size (390 × 844): no sideways page scroll, every nav destination and the chat's composer
and parameter panel within reach."""

import pytest
from playwright.sync_api import expect

from playground.chat.models import Conversation, Message
from playground.connections.models import Connection
from tests.browser.conftest import orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
NAV = ["Chat", "Rerank", "Speech", "Batches", "Prompts", "Voices", "Connections", "Teams"]
PAGES = {
    "chat": "/",
    "connections": "/connections/",
    "speech": "/speech/",
    "voices": "/speech/voices/",
    "rerank": "/rerank/",
    "batches": "/batches/",
    "teams": "/teams/",
    "prompts": "/prompts/",
    "prompt-tokens": "/prompts/tokens/",
    "new-prompt": "/prompts/new/",
}


@pytest.fixture
def phone(browser, live_server, client, alice):
    from tests.browser.conftest import log_in

    context = browser.new_context(base_url=live_server.url, viewport=PHONE, is_mobile=True, has_touch=True)
    context.set_default_timeout(15_000)
    log_in(context, client, alice)
    yield context.new_page()
    context.close()


def assert_no_sideways_scroll(page) -> None:
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"{page.url} scrolls sideways: {widths[0]} px of content in {widths[1]} px"


def assert_on_screen(locator) -> None:
    expect(locator).to_be_visible()
    box = locator.bounding_box()
    assert box is not None
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + 1, f"off screen: {box}"


@pytest.mark.parametrize("name", list(PAGES))
def test_pages_fit_a_phone(phone, name):
    phone.goto(PAGES[name])
    assert_no_sideways_scroll(phone)
    screenshot(phone, f"mobile-{name}")


def test_every_nav_destination_is_reachable_from_the_menu(phone):
    phone.goto("/connections/")
    menu = phone.get_by_role("button", name="Menu")
    for name in NAV:
        menu.click()
        expect(menu).to_have_attribute("aria-expanded", "true")
        link = phone.get_by_role("navigation", name="Main").get_by_role("link", name=name, exact=True)
        assert_on_screen(link)
        link.click()
        # The menu closes on the new page; its link for this page is the current one.
        expect(menu).to_have_attribute("aria-expanded", "false")
        expect(phone.locator("#mainnav a[aria-current=page]")).to_have_text(name)
    # Escape closes an open menu.
    menu.click()
    phone.keyboard.press("Escape")
    expect(menu).to_have_attribute("aria-expanded", "false")


@pytest.mark.needs_local_api
def test_a_conversation_keeps_its_composer_panel_and_list_in_reach(phone, alice):
    def long_conversation():
        connection = Connection.objects.get(owner=alice, is_local=True)
        conversation = Conversation.objects.create(owner=alice, connection=connection, title="Long table")
        Message.objects.create(conversation=conversation, role="user", content="Tables please " * 40)
        Message.objects.create(
            conversation=conversation,
            role="assistant",
            status="complete",
            content="| a | b | c | d | e | f |\n|---|---|---|---|---|---|\n" + "| long cell text here " * 6 + "|\n\n"
            "```python\n" + "x = 'a very long line of code that must scroll inside its block' * 10\n" + "```",
        )
        return conversation

    conversation = orm(long_conversation)
    phone.goto(f"/c/{conversation.pk}/")
    assert_no_sideways_scroll(phone)
    assert_on_screen(phone.get_by_role("textbox", name="Message"))
    assert_on_screen(phone.get_by_role("button", name="Send"))

    phone.get_by_role("button", name="Settings").click()
    assert_on_screen(phone.get_by_label("Model", exact=True))
    screenshot(phone, "mobile-chat-panel")
    phone.get_by_role("button", name="Hide settings").click()
    expect(phone.get_by_label("Model", exact=True)).to_be_hidden()

    phone.get_by_role("button", name="Show conversations").click()
    assert_on_screen(phone.get_by_role("link", name="Long table"))


@pytest.mark.needs_local_api
def test_the_menu_button_shows_on_a_phone_only_and_no_other_button_looks_like_it(phone):
    phone.goto("/")
    menu = phone.get_by_role("button", name="Menu")
    expect(menu).to_be_visible()
    # The conversations drawer's button has an icon of its own (two identical ≡ stacked were confusing).
    drawer = phone.get_by_role("button", name="Show conversations")
    expect(drawer).to_be_visible()
    assert menu.locator("path").get_attribute("d") != drawer.locator("path").get_attribute("d")
    phone.set_viewport_size({"width": 1440, "height": 900})
    expect(menu).to_be_hidden()
    expect(phone.get_by_role("navigation", name="Main").get_by_role("link", name="Rerank")).to_be_visible()


@pytest.mark.needs_local_api
def test_the_start_page_settings_open_on_a_phone_before_the_first_message(phone):
    phone.goto("/")
    expect(phone.get_by_label("System prompt")).to_be_hidden()
    phone.get_by_role("button", name="Settings").click()
    assert_on_screen(phone.get_by_label("System prompt"))
