"""The catalog page and what it changes in the chat, in Chromium against the live server."""

import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from playground.chat.models import Conversation
from playground.connections.models import ensure_local_connection
from tests.browser.conftest import orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def open_conversation(page, alice, model_id="local/chat"):
    conversation = orm(
        lambda: Conversation.objects.create(owner=alice, connection=ensure_local_connection(alice), model_id=model_id)
    )
    page.goto(f"/c/{conversation.pk}/")
    expect(page.get_by_role("textbox", name="Message")).to_be_visible()
    page.wait_for_function("() => window.ChatClient !== undefined")
    page.wait_for_timeout(300)
    return conversation


def test_an_override_in_the_catalog_makes_attach_appear_in_the_chat(alice, alice_page):
    orm(call_command, "seed_catalog", verbosity=0)
    page = alice_page
    open_conversation(page, alice)
    expect(page.locator("#attach-button")).to_be_hidden()

    local = orm(ensure_local_connection, alice)
    page.goto(f"/catalog/{local.pk}/")
    page.get_by_role("link", name="Edit local/chat").click()
    expect(page.locator("#override-form")).to_be_visible()
    screenshot(page, "catalog-edit-desktop")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "catalog-edit-phone")
    page.set_viewport_size({"width": 1280, "height": 860})
    page.get_by_label("Images").check()
    page.get_by_role("button", name="Save").click()
    expect(page.locator("tr:has(code:text-is('local/chat'))")).to_contain_text("vision")
    screenshot(page, "catalog-desktop")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "catalog-phone")
    page.set_viewport_size({"width": 1280, "height": 860})

    open_conversation(page, alice)
    expect(page.locator("#attach-button")).to_be_visible()
    page.goto("/connections/new/")
    page.set_viewport_size({"width": 390, "height": 1000})
    screenshot(page, "connection-form-phone")


def test_the_composer_counts_the_wait_for_the_first_token_then_says_it_gave_up(alice, alice_page):
    orm(call_command, "seed_catalog", verbosity=0)
    local = orm(ensure_local_connection, alice)
    local.first_token_timeout = 4
    orm(local.save)
    page = alice_page
    open_conversation(page, alice)
    box = page.get_by_role("textbox", name="Message")
    box.fill("[fault:stall-30] hello")
    box.press("Enter")
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer.locator(".waiting .waited")).to_have_text(re.compile(r"^[1-9]\d* s$"), timeout=20_000)
    expect(answer.locator(".waiting")).to_contain_text("Waiting for the first token…")
    screenshot(page, "chat-waiting")
    expect(answer).to_contain_text("No first token after 4 s", timeout=60_000)
    expect(answer.get_by_role("button", name=re.compile("Retry"))).to_be_visible()
