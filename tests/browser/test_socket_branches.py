"""Branch forms over the chat websocket in Chromium: edit and resend, regenerate and switch go as socket frames
(no POST to their views), and the thread updates in place (at desktop width and at 390 px)."""

import os

import pytest
from playwright.sync_api import expect

from playground.chat.models import Message
from tests.browser.conftest import orm
from tests.browser.test_chat import DONE, send

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

SHOTS = "/tmp/socket-branches-shots"


def test_edit_regenerate_and_switch_go_over_the_websocket(open_chat):
    os.makedirs(SHOTS, exist_ok=True)
    page = open_chat()
    page.wait_for_function("() => window.ChatClient.connected()")
    posts = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)

    first = send(page, "Name a river in France")
    expect(first).to_have_attribute("data-status", "complete", timeout=DONE)
    conversation_id = int(first.get_attribute("data-message-id"))
    conversation_id = orm(lambda: Message.objects.get(pk=conversation_id).conversation_id)

    question = page.locator('article[data-role="user"]').first
    question.hover()
    question.get_by_role("button", name="Edit").click()
    question.get_by_label("Edited message").fill("Name a river in Italy")
    question.get_by_role("button", name="Save and resend").click()
    expect(page.locator('article[data-role="user"] .message-body')).to_have_text("Name a river in Italy")
    expect(page.locator('article[data-role="user"] .sibling-count')).to_have_text("2/2")
    answer = page.locator('article[data-role="assistant"]')
    expect(answer).to_have_count(1)
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    assert answer.locator(".message-body").inner_text().strip()

    answer.hover()
    page.get_by_role("button", name="Regenerate").click()
    regenerated = page.locator('article[data-role="assistant"]')
    expect(regenerated.locator(".sibling-count")).to_have_text("2/2")
    expect(regenerated).to_have_attribute("data-status", "complete", timeout=DONE)

    page.locator('article[data-role="user"]').get_by_role("button", name="Previous version").click()
    expect(page.locator('article[data-role="user"] .message-body')).to_have_text("Name a river in France")
    page.set_viewport_size({"width": 390, "height": 800})
    page.screenshot(path=f"{SHOTS}/after-switch-390.png")

    assert [url for url in posts if "/messages/" in url] == []
    rows = orm(
        lambda: list(
            Message.objects.filter(conversation_id=conversation_id).order_by("pk").values_list("role", "content")
        )
    )
    assert [role for role, _ in rows] == ["user", "assistant", "user", "assistant", "assistant"]
    assert rows[2][1] == "Name a river in Italy"


def test_the_forms_fall_back_to_the_post_when_the_socket_is_closed(open_chat):
    page = open_chat()
    first = send(page, "Name a river in Spain")
    expect(first).to_have_attribute("data-status", "complete", timeout=DONE)
    page.evaluate("() => { window.ChatClient.request = () => false; }")  # as when the socket is down
    posts = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    first.hover()
    page.get_by_role("button", name="Regenerate").click()
    regenerated = page.locator('article[data-role="assistant"]')
    expect(regenerated.locator(".sibling-count")).to_have_text("2/2")
    expect(regenerated).to_have_attribute("data-status", "complete", timeout=DONE)
    assert any(url.endswith("/regenerate/") for url in posts)
