"""Sharing in Chromium: share a conversation live, watch an answer stream in from an anonymous context, revoke."""

import time

import pytest
from playwright.sync_api import expect

from playground.sharing.models import Share
from tests.browser.conftest import orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

DONE = 60_000


def test_a_viewer_follows_a_shared_conversation_live_until_it_is_revoked(open_chat, browser, live_server):
    page = open_chat()
    page.locator(".share-menu > summary").click()
    page.get_by_role("link", name="Share link…").click()
    expect(page.get_by_role("heading", name="New link")).to_be_visible()
    page.locator("#id_live").check()
    page.get_by_role("button", name="Create link").click()
    expect(page.locator(".share-links .copy-button")).to_have_text("Copy link")
    share = orm(Share.objects.get)
    assert share.live and share.visibility == Share.ANYONE
    screenshot(page, "sharing-source-1280")

    viewer_context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 860})
    viewer_context.set_default_timeout(15_000)
    try:
        viewer = viewer_context.new_page()
        refused = []
        viewer.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
        response = viewer.goto(f"/s/{share.token}/")
        assert response.status == 200 and response.headers["referrer-policy"] == "no-referrer"
        viewer.wait_for_function("() => document.getElementById('share-thread').dataset.live === 'open'")

        page.goto(f"/c/{share.source_id}/")
        page.wait_for_function("() => window.ChatClient !== undefined")
        page.wait_for_timeout(300)
        box = page.get_by_role("textbox", name="Message")
        box.fill("Write 300 words about rivers")
        box.press("Enter")

        # The viewer gets the question, then the answer growing while it streams.
        expect(viewer.locator(".message-user")).to_contain_text("Write 300 words about rivers")
        answer = viewer.locator(".message-assistant").last
        expect(answer).to_be_attached()
        lengths = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and answer.get_attribute("data-status") == "streaming":
            lengths.append(answer.locator(".message-body").evaluate("node => node.innerText.length"))
            viewer.wait_for_timeout(150)
        assert len({n for n in lengths if n}) >= 3, f"the viewer did not see the answer grow: {lengths}"
        expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
        expect(answer.locator(".share-request")).to_contain_text("Request JSON")
        # The owner sees the viewer (the badge polls every 5 s).
        expect(page.locator("#share-watching")).to_contain_text("1 watching", timeout=12_000)
        screenshot(viewer, "sharing-view-1280")
        viewer.set_viewport_size({"width": 390, "height": 844})
        screenshot(viewer, "sharing-view-390")
        viewer.set_viewport_size({"width": 1280, "height": 860})

        page.goto("/shared/")
        expect(page.get_by_role("link", name="New conversation")).to_be_visible()
        screenshot(page, "sharing-links-1280")
        page.set_viewport_size({"width": 390, "height": 844})
        screenshot(page, "sharing-links-390")
        page.once("dialog", lambda dialog: dialog.accept())
        started = time.monotonic()
        page.get_by_role("button", name="Revoke").click()
        expect(viewer.locator("#share-ended")).to_be_visible(timeout=5_000)
        assert time.monotonic() - started < 5
        viewer.wait_for_function("() => document.getElementById('share-thread').dataset.live === 'closed'")
        assert viewer.reload().status == 404
        assert refused == []
    finally:
        viewer_context.close()
