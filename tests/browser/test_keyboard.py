"""Every action of chat, branches, compare, tools, share, teams and evaluate by keyboard alone (Tab, Shift+Tab,
Enter, Space, arrows and typing; no click), with the focus never left on the page's body after a re-render, and
the shortcuts listed in one place ("?")."""

import json

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

DONE = 60_000
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
FOCUSED_NAME = """() => {
  const a = document.activeElement;
  if (!a || a === document.body) return "";
  const label = a.getAttribute("aria-label") || (a.labels && a.labels[0] && a.labels[0].innerText) || a.innerText || a.value || "";
  return label.trim();
}"""


def tab_to(page, name: str, *, back: bool = False, limit: int = 150) -> None:
    """Tab (or Shift+Tab) until the focused control's name is `name`."""
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        if page.evaluate(FOCUSED_NAME) == name:
            return
    raise AssertionError(f"the keyboard never reached {name!r}")


def focus_kept(page) -> None:
    assert page.evaluate("() => document.activeElement && document.activeElement !== document.body"), "focus lost"


def test_chat_branches_compare_and_share_by_keyboard_alone(open_chat):
    page = open_chat()
    answers = page.locator('article[data-role="assistant"]')
    tab_to(page, "Message")
    page.keyboard.type("Write 12 words about tea")
    page.keyboard.press("Enter")
    expect(answers.last).to_have_attribute("data-status", "complete", timeout=DONE)

    # Regenerate: a second version, and the focus stays on the answer's actions.
    tab_to(page, "Regenerate", back=True)
    page.keyboard.press("Enter")
    expect(page.locator(".sibling-count").last).to_have_text("2/2", timeout=DONE)
    expect(answers.last).to_have_attribute("data-status", "complete", timeout=DONE)
    focus_kept(page)
    tab_to(page, "Previous version")
    page.keyboard.press("Enter")
    expect(page.locator(".sibling-count").last).to_have_text("1/2")
    focus_kept(page)

    # Edit the question and resend.
    tab_to(page, "Edit", back=True)
    page.keyboard.press("Enter")
    expect(page.get_by_role("textbox", name="Edited message")).to_be_focused()
    page.keyboard.press("ControlOrMeta+A")
    page.keyboard.type("Write 8 words about coffee")
    tab_to(page, "Save and resend")
    page.keyboard.press("Enter")
    expect(page.locator(".message-user .message-body").last).to_contain_text("coffee", timeout=DONE)
    expect(answers.last).to_have_attribute("data-status", "complete", timeout=DONE)
    focus_kept(page)

    # Compare two models on the composer's text, then continue with one column.
    tab_to(page, "Message")
    page.keyboard.type("Write 10 words about tides")
    tab_to(page, "Compare models")
    page.keyboard.press("Enter")
    tab_to(page, "Compare")
    page.keyboard.press("Enter")
    columns = page.locator(".compare-grid article[data-role='assistant']")
    expect(columns).to_have_count(2, timeout=DONE)
    for column in (columns.nth(0), columns.nth(1)):
        expect(column).to_have_attribute("data-status", "complete", timeout=DONE)
    tab_to(page, "Continue with this one", back=True)
    page.keyboard.press("Enter")
    expect(page.locator(".compare-grid")).to_have_count(0, timeout=DONE)
    focus_kept(page)

    # Share: the menu opens with Enter, its first item makes a link.
    tab_to(page, "Share", back=True)
    page.keyboard.press("Enter")
    tab_to(page, "Share link…")
    page.keyboard.press("Enter")
    page.wait_for_url("**/shared/conversation/*/")
    tab_to(page, "Create link")
    page.keyboard.press("Enter")
    expect(page.locator("a[href^='/s/']").first).to_be_visible()

    # The shortcuts, in one place.
    page.keyboard.press("Escape")
    page.locator("body").press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Stop the answer")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()


def test_tools_are_set_and_answered_by_keyboard(open_chat):
    page = open_chat("local/tools")
    tab_to(page, "Parameters")
    page.keyboard.press("ArrowRight")
    expect(page.get_by_role("tab", name="Tools")).to_have_attribute("aria-selected", "true")
    tab_to(page, "tools (JSON array)")
    page.keyboard.insert_text(json.dumps([WEATHER]))
    page.keyboard.press("Tab")  # a change saves the panel
    expect(page.get_by_role("textbox", name="tools")).to_have_value(json.dumps([WEATHER]), timeout=10_000)
    expect(page.locator("#panel")).to_contain_text("Saved")
    tab_to(page, "Message", back=True)
    page.keyboard.type("What's the weather in Paris?")
    page.keyboard.press("Enter")
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    tab_to(page, "Result of get_weather", back=True)
    page.keyboard.type("18 C")
    tab_to(page, "Send result")
    page.keyboard.press("Enter")
    expect(page.locator('article[data-role="tool"]')).to_have_count(1, timeout=DONE)
    expect(page.locator('article[data-role="assistant"]').last).to_have_attribute(
        "data-status", "complete", timeout=DONE
    )
    focus_kept(page)


def test_teams_and_evaluate_by_keyboard(alice_page):
    page = alice_page
    page.goto("/teams/")
    tab_to(page, "Name")
    page.keyboard.type("Keyboard team")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Keyboard team")
    tab_to(page, "Make invite link")
    page.keyboard.press("Enter")
    expect(page.locator(".invite-link").first).to_be_visible()

    page.goto("/evaluate/")
    tab_to(page, "Title")
    page.keyboard.type("Keyboard evaluation")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Keyboard evaluation")
