"""The presenter view in Chromium: full width, large type, the model strip, and its keyboard shortcuts."""

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def test_presenter_view_hides_panels_and_answers_to_its_shortcuts(open_chat):
    page = open_chat(params={"temperature": 0.4})
    conversation_url = page.url
    page.locator(".share-menu > summary").click()
    page.get_by_role("link", name="Present").click()
    expect(page.locator("body.presenter")).to_be_attached()
    page.wait_for_function("() => window.ChatClient !== undefined")
    page.wait_for_timeout(300)
    expect(page.locator(".chat-sidebar")).to_be_hidden()
    expect(page.locator(".topbar")).to_be_hidden()
    expect(page.locator("#chat-panel")).to_be_hidden()
    strip = page.locator("#presenter-strip")
    expect(strip).to_contain_text("local/chat")
    expect(strip).to_contain_text("temperature=0.4")

    page.keyboard.press("Alt+P")
    expect(page.locator("#chat-panel")).to_be_visible()
    page.keyboard.press("Alt+P")
    expect(page.locator("#chat-panel")).to_be_hidden()

    before = page.locator(".thread").evaluate("node => parseFloat(getComputedStyle(node).fontSize)")
    page.keyboard.press("Alt+Equal")
    page.keyboard.press("Alt+Equal")
    expect(page.locator("body")).to_have_attribute("data-present-scale", "1.2")
    after = page.locator(".thread").evaluate("node => parseFloat(getComputedStyle(node).fontSize)")
    assert after > before * 1.15

    box = page.get_by_role("textbox", name="Message")
    box.fill("Write 3000 words about lakes")
    box.press("Control+Enter")
    answer = page.locator('article[data-role="assistant"]').last
    page.wait_for_function("node => node.innerText.length > 200", arg=answer.locator(".message-body").element_handle())
    screenshot(page, "presenter-1280")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "presenter-390")
    page.set_viewport_size({"width": 1280, "height": 860})
    page.keyboard.press("Alt+S")
    expect(answer).to_have_attribute("data-status", "stopped", timeout=15_000)

    page.keyboard.press("Alt+0")
    expect(page.locator("body")).to_have_attribute("data-present-scale", "1")
    page.keyboard.press("Alt+X")
    page.wait_for_url(conversation_url)
    expect(page.locator("body.presenter")).not_to_be_attached()


def test_rerank_and_speech_pages_have_a_presenter_view(alice_page):
    for path in ("/rerank/", "/speech/"):
        alice_page.goto(path)
        alice_page.get_by_role("link", name="Present").click()
        expect(alice_page.locator("body.presenter")).to_be_attached()
        expect(alice_page.locator(".topbar")).to_be_hidden()
        size = alice_page.locator("main").evaluate("node => parseFloat(getComputedStyle(node).fontSize)")
        assert size >= 20, f"{path}: presenter type is {size}px"
        alice_page.keyboard.press("Alt+X")
        alice_page.wait_for_url(f"**{path}")
        expect(alice_page.locator("body.presenter")).not_to_be_attached()
