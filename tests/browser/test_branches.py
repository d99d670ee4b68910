"""Branches and compare in Chromium: edit and resend then switch branches (saved across a reload), and three
compare columns streaming at once, then "Continue with this one"; at desktop width and at 390 px."""

import os
import time

import pytest
from playwright.sync_api import expect

from playground.chat.models import Message
from tests.browser.conftest import orm
from tests.browser.test_chat import DONE, send

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

SHOTS = "/tmp/branches-shots"


def shot(page, name: str) -> None:
    page.screenshot(path=f"{SHOTS}/{name}.png", full_page=False)


def test_edit_and_resend_then_switch_branches(open_chat):
    os.makedirs(SHOTS, exist_ok=True)
    page = open_chat()
    first = send(page, "Name a river in France")
    expect(first).to_have_attribute("data-status", "complete", timeout=DONE)
    first_text = first.locator(".message-body").inner_text()

    question = page.locator('article[data-role="user"]').first
    question.hover()
    question.get_by_role("button", name="Edit").click()
    question.get_by_label("Edited message").fill("Name a river in Italy")
    question.get_by_role("button", name="Save and resend").click()

    answer = page.locator('article[data-role="assistant"]')
    expect(answer).to_have_count(1)
    expect(page.locator('article[data-role="user"] .message-body')).to_have_text("Name a river in Italy")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(page.locator('article[data-role="user"] .sibling-count')).to_have_text("2/2")
    shot(page, "edit-branch-desktop")

    # Back to the first version: its question and its answer, in place; the choice survives a reload.
    page.get_by_role("button", name="Previous version").click()
    expect(page.locator('article[data-role="user"] .message-body')).to_have_text("Name a river in France")
    expect(page.locator('article[data-role="user"] .sibling-count')).to_have_text("1/2")
    expect(page.locator('article[data-role="assistant"] .message-body')).to_have_text(first_text)
    page.reload()
    expect(page.locator('article[data-role="user"] .message-body')).to_have_text("Name a river in France")
    page.get_by_role("button", name="Next version").click()
    expect(page.locator('article[data-role="user"] .message-body')).to_have_text("Name a river in Italy")

    # Regenerate the answer: a second version of it, streamed in its place.
    page.locator('article[data-role="assistant"]').hover()
    page.get_by_role("button", name="Regenerate").click()
    regenerated = page.locator('article[data-role="assistant"]')
    expect(regenerated.locator(".sibling-count")).to_have_text("2/2")
    expect(regenerated).to_have_attribute("data-status", "complete", timeout=DONE)


def test_compare_three_columns_streaming_at_once(open_chat):
    os.makedirs(SHOTS, exist_ok=True)
    page = open_chat()
    page.get_by_role("textbox", name="Message").fill("Write 400 words about tides")
    page.locator("#compare-setup > summary").click()
    page.get_by_label("Model of column 1").select_option("local/chat")
    page.get_by_label("Model of column 2").select_option("local/reasoner")
    page.get_by_label("Model of column 3").select_option("local/chat")
    page.get_by_text("Parameters of column 3").click()  # the panel's own fields, not typed JSON
    page.get_by_label("temperature of column 3").fill("0.2")  # a name of its own, not the panel's
    page.locator("#compare-button").click()

    columns = page.locator(".compare-grid article[data-role='assistant']")
    expect(columns).to_have_count(3)
    expect(page.locator('article[data-role="user"] .message-body')).to_have_text("Write 400 words about tides")
    # All three grow while all three are streaming.
    seen_together = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not seen_together:
        state = page.evaluate(
            """() => Array.from(document.querySelectorAll('.compare-grid article')).map(a => [
                a.dataset.status, a.querySelector('.message-body').innerText.length])"""
        )
        seen_together = all(status == "streaming" and length > 0 for status, length in state)
        if not seen_together:
            page.wait_for_timeout(50)
    assert seen_together, "the three columns were never streaming text at the same time"
    shot(page, "compare-streaming-desktop")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "compare-streaming-phone")
    page.set_viewport_size({"width": 1280, "height": 860})

    for index in range(3):
        expect(columns.nth(index)).to_have_attribute("data-status", "complete", timeout=DONE)
        meta = columns.nth(index).locator(".message-meta")
        expect(meta).to_contain_text("TTFT")
        expect(meta).to_contain_text("completion")
    expect(columns.nth(1).locator(".message-model")).to_have_text("local/reasoner")
    answers = orm(
        lambda: list(Message.objects.filter(role="assistant").order_by("pk").values_list("params", flat=True))
    )
    assert [a.get("temperature") for a in answers[-3:]][2] == 0.2 and answers[-3].get("temperature") != 0.2
    shot(page, "compare-done-desktop")
    page.set_viewport_size({"width": 390, "height": 844})
    # At 390 px the grid scrolls sideways inside itself; the page does not.
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
    grid = page.locator(".compare-grid")
    assert grid.evaluate("g => g.scrollWidth > g.clientWidth")
    shot(page, "compare-done-phone")
    page.set_viewport_size({"width": 1280, "height": 860})

    columns.nth(1).get_by_role("button", name="Continue with this one").click()
    expect(page.locator(".compare-grid")).to_have_count(0)
    answer = page.locator('article[data-role="assistant"]')
    expect(answer).to_have_count(1)
    expect(answer.locator(".message-model")).to_have_text("local/reasoner")
    expect(answer.locator(".sibling-count")).to_have_text("2/3")
    page.reload()
    expect(page.locator('article[data-role="assistant"] .sibling-count')).to_have_text("2/3")
    shot(page, "compare-picked-desktop")


def test_insert_a_few_shot_message_and_delete_one(open_chat):
    page = open_chat()
    answer = send(page, "Translate: cat")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    question = page.locator('article[data-role="user"]').first
    question.hover()
    question.get_by_role("button", name="Insert above").click()
    form = question.locator(".action-form")
    form.get_by_label("Role").select_option("system")
    form.get_by_label("Inserted message").fill("Answer in French.")
    form.get_by_role("button", name="Insert").click()
    roles = page.locator("#message-list article")
    expect(roles.first).to_have_attribute("data-role", "system")
    expect(roles).to_have_count(3)

    page.on("dialog", lambda dialog: dialog.accept())
    answer = page.locator('article[data-role="assistant"]')
    answer.hover()
    answer.get_by_role("button", name="Remove this message").click()
    expect(page.locator("#message-list article")).to_have_count(2)
    page.reload()
    expect(page.locator("#message-list article")).to_have_count(2)
    expect(page.locator("#message-list article").first).to_contain_text("Answer in French.")
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator('article[data-role="user"]').get_by_role("button", name="Edit").click()
    shot(page, "edit-open-phone")


def test_a_branch_switched_in_one_tab_shows_in_the_other(open_chat, context):
    from playground.chat import branches
    from playground.chat.models import Conversation

    page = open_chat()
    pk = int(page.url.rstrip("/").split("/")[-1])

    def build():
        conversation = Conversation.objects.get(pk=pk)
        q = branches.add(conversation, None, role="user", content="Which sea?")
        branches.add(conversation, q.pk, role="assistant", content="The Baltic.")
        branches.add(conversation, q.pk, role="assistant", content="The North Sea.")

    orm(build)
    page.reload()
    other = context.new_page()
    other.goto(f"/c/{pk}/")
    other.wait_for_function("() => window.ChatClient !== undefined")
    expect(other.locator('article[data-role="assistant"] .message-body')).to_have_text("The North Sea.")
    other.wait_for_timeout(300)  # its websocket is up
    page.get_by_role("button", name="Previous version").click()
    expect(page.locator('article[data-role="assistant"] .message-body')).to_have_text("The Baltic.")
    expect(other.locator('article[data-role="assistant"] .message-body')).to_have_text("The Baltic.")
    expect(other.locator('article[data-role="assistant"] .sibling-count')).to_have_text("1/2")
    os.makedirs(SHOTS, exist_ok=True)
    shot(other, "siblings-desktop")
    other.set_viewport_size({"width": 390, "height": 844})
    assert other.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
    shot(other, "siblings-phone")
