"""The chat's one polite live region: a finished answer is announced once (never a delta), and so are a stop and
the connection going offline and coming back, as soon as the browser knows."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser.test_chat import send

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

RECORD = """() => {
  window.announced = [];
  const region = document.getElementById("chat-announcer");
  new MutationObserver(() => { if (region.textContent) window.announced.push(region.textContent); })
    .observe(region, {childList: true, characterData: true, subtree: true});
}"""


def test_a_finished_answer_is_announced_once_and_no_delta_is(open_chat):
    page = open_chat()
    live = ".chat-main :is([aria-live], [role=status], [role=alert])"
    expect(page.locator(live)).to_have_count(1)
    page.evaluate(RECORD)
    answer = send(page, "Write 80 words about rivers")
    expect(answer).to_have_attribute("data-status", "complete", timeout=60_000)
    expect(page.locator("#chat-announcer")).to_have_text(re.compile(r"^Answer finished, \d+ words\.$"))
    assert len(page.evaluate("window.announced")) == 1
    expect(page.locator(live)).to_have_count(1)


def test_a_stop_is_announced(open_chat):
    page = open_chat()
    answer = send(page, "Write 3000 words about lighthouses")
    page.wait_for_function("node => node.innerText.length > 50", arg=answer.locator(".message-body").element_handle())
    page.keyboard.press("Escape")
    expect(answer).to_have_attribute("data-status", "stopped", timeout=30_000)
    expect(page.locator("#chat-announcer")).to_have_text("Answer stopped.")


def test_going_offline_is_said_at_once_and_coming_back_too(open_chat, context):
    page = open_chat()
    page.wait_for_function("() => window.ChatClient.connected()")
    context.set_offline(True)
    banner = page.locator("#connection-banner")
    # At once: not when a dead socket finally closes, nor after the heartbeat's silence.
    expect(banner).to_contain_text("offline", timeout=1_000)
    expect(page.locator("#chat-announcer")).to_contain_text("You are offline", timeout=1_000)
    context.set_offline(False)
    page.wait_for_function("() => window.ChatClient.connected()", timeout=10_000)
    expect(banner).to_contain_text("Reconnected")
    expect(page.locator("#chat-announcer")).to_have_text("Reconnected.")
