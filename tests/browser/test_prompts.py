"""Prompts in Chromium at 1440 px and 390 px, with two users: the owner writes a team prompt, saves a second
version, moves a label in one click and compares the versions; a team member finds it in the library, starts a
chat from it (the conversation shows name@vN and the answer streams) and saves the chat back as a new version.
The main flow runs on the local API and on the independent fake provider."""

import re

import pytest
from django.test import Client
from playwright.sync_api import expect

from playground.batches.models import Batch
from playground.chat.models import Conversation
from playground.prompts.models import Prompt
from playground.teams.models import MEMBER, OWNER, Membership, Team
from tests.browser import axe
from tests.browser.conftest import log_in, orm, screenshot
from tests.fakeprovider import server as fake
from tests.providers.conftest import fake_provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

SIZES = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}
ANSWER = 60_000


def page_of(browser, live_server, user, size):
    context = browser.new_context(base_url=live_server.url, viewport=SIZES[size])
    log_in(context, Client(), user)
    return context.new_page()


def no_sideways_scroll(page):
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"] + 1, f"the page scrolls sideways: {width}px"


def choose_model(page, connection: str, model: str):
    page.get_by_label("Connection", exact=True).select_option(label=connection)
    page.wait_for_load_state("networkidle")
    expect(page.get_by_label("Model", exact=True).locator(f'option[value="{model}"]')).to_have_count(1)
    page.get_by_label("Model", exact=True).select_option(value=model)
    page.wait_for_load_state("networkidle")


def write_prompt(page, name: str, library: str, *, connection="Local", model="local/chat"):
    page.goto("/prompts/")
    page.get_by_role("link", name="New prompt").click()
    page.get_by_label("Name").fill(name)
    page.get_by_label("Library").select_option(label=library)
    page.get_by_label("System prompt").fill("You answer in one sentence.")
    page.get_by_label("User message (template)").fill("Tell me about {{topic}}.")
    choose_model(page, connection, model)
    page.get_by_label("What changed (optional)").fill("first draft")
    page.get_by_role("button", name="Create prompt").click()
    expect(page.locator("#prompt-title")).to_contain_text(name)


def start_chat(page, topic: str):
    page.get_by_role("link", name="New chat from this prompt").click()
    page.get_by_label("topic").fill(topic)
    page.get_by_role("button", name="Start the chat").click()
    expect(page.locator("#prompt-ref")).to_be_visible()
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_be_visible(timeout=ANSWER)
    expect(answer.locator(".message-body, .content, .markdown").first).not_to_be_empty(timeout=ANSWER)
    return answer


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_owner_and_member_share_a_team_prompt(browser, live_server, alice, bob, catalog, size):
    team = orm(Team.objects.create, name="Acme")
    orm(Membership.objects.create, team=team, user=alice, role=OWNER)
    orm(Membership.objects.create, team=team, user=bob, role=MEMBER)
    owner = page_of(browser, live_server, alice, size)

    write_prompt(owner, "rivers", "Team: Acme")
    owner.get_by_role("link", name="Edit (new version)").click()
    owner.get_by_label("User message (template)").fill("Tell me about {{topic}} in {{style}} style.")
    no_sideways_scroll(owner)
    axe.assert_accessible(owner, "prompt editor")
    screenshot(owner, f"prompts-edit-{size}")
    owner.get_by_label("What changed (optional)").fill("a style")
    owner.get_by_role("button", name="Save as new version").click()
    expect(owner.locator("#prompt-title")).to_contain_text("v2")
    history = owner.locator("#history")
    expect(history.locator("tbody tr")).to_have_count(2)
    owner.get_by_role("button", name="Move production to v1").click()
    expect(owner.locator("#v1 .labels-cell")).to_contain_text("production")
    no_sideways_scroll(owner)
    axe.assert_accessible(owner, "prompt detail")
    screenshot(owner, f"prompts-detail-{size}")

    owner.get_by_role("link", name="Diff to previous").first.click()
    diff = owner.locator("#diff")
    expect(diff).to_contain_text("User template")
    expect(diff.locator(".diff-line.diff-add")).to_contain_text("in {{style}} style")
    expect(diff.locator(".diff-line.diff-del")).to_contain_text("Tell me about {{topic}}.")
    expect(diff.locator(".visually-hidden", has_text="added:").first).to_be_attached()
    no_sideways_scroll(owner)
    axe.assert_accessible(owner, "compare versions")
    screenshot(owner, f"prompts-compare-{size}")

    member = page_of(browser, live_server, bob, size)
    member.goto("/prompts/")
    no_sideways_scroll(member)
    screenshot(member, f"prompts-list-{size}")
    member.get_by_role("link", name="rivers").click()
    expect(member.locator("#v1 .labels-cell")).to_contain_text("production")
    member.get_by_role("link", name="New chat from this prompt").click()
    member.get_by_label("topic").fill("the Danube")
    member.get_by_role("button", name="Start the chat").click()
    expect(member.locator(".alert-error, [role=alert]").first).to_contain_text("style has no value")
    member.get_by_label("style").fill("plain")
    member.get_by_role("button", name="Start the chat").click()
    expect(member.locator("#prompt-ref")).to_have_text("rivers@v2")
    expect(member.locator('article[data-role="assistant"]').last).to_be_visible(timeout=ANSWER)
    conversation = orm(lambda: Conversation.objects.get(owner=bob))
    assert conversation.prompt_ref == "rivers@v2"
    no_sideways_scroll(member)
    screenshot(member, f"prompts-chat-{size}")

    member.locator(".share-menu > summary").click()
    member.get_by_role("link", name="Save as prompt…").click()
    member.get_by_label("Save as").select_option(label="New version of rivers")
    member.get_by_label("What changed (optional)").fill("from bob's chat")
    member.get_by_role("button", name="Save").click()
    expect(member.locator("#prompt-title")).to_contain_text("v3")
    prompt = orm(lambda: Prompt.objects.get(name="rivers"))
    v3 = orm(lambda: prompt.versions.select_related("author").get(number=3))
    assert v3.author == bob and v3.template == "Tell me about the Danube in plain style."
    for page in (owner, member):
        page.context.close()


def test_the_main_flow_on_the_fake_provider(browser, live_server, alice, catalog, fake_openai):
    orm(fake_provider, alice, fake_openai)
    page = page_of(browser, live_server, alice, "desktop")
    write_prompt(page, "fake-rivers", "My prompts", connection="Fake OpenAI", model=fake.CHAT_MODEL)
    page.get_by_role("link", name="New chat from this prompt").click()
    page.get_by_label("topic").fill("the Rhine")
    page.get_by_role("button", name="Start the chat").click()
    expect(page.locator("#prompt-ref")).to_have_text("fake-rivers@v1")
    expect(page.locator('article[data-role="assistant"]').last).to_be_visible(timeout=ANSWER)
    sent = [body for body in fake_openai.state.bodies("/chat/completions") if body]
    assert sent, "nothing reached the fake provider"
    messages = sent[-1]["messages"]
    assert messages[0] == {"role": "system", "content": "You answer in one sentence."}
    assert re.search("Tell me about the Rhine.", str(messages[-1]["content"]))
    assert sent[-1]["model"] == fake.CHAT_MODEL

    # Improve this prompt: the judge (the fake's chat model) proposes a draft, shown as a diff, accepted as v2.
    page.goto("/prompts/")
    page.get_by_role("link", name="fake-rivers").click()
    page.get_by_role("link", name="Improve this prompt").click()
    choose_model(page, "Fake OpenAI", fake.CHAT_MODEL)
    page.get_by_label("Instruction").fill("shorter")
    page.get_by_role("button", name="Propose a draft").click()
    expect(page.locator("#draft")).to_contain_text("User template")
    judged = fake_openai.state.bodies("/chat/completions")[-1]
    assert "Instruction: shorter" in judged["messages"][1]["content"]
    page.get_by_role("button", name="Accept as a new version").click()
    expect(page.locator("#prompt-title")).to_contain_text("v2")
    screenshot(page, "prompts-improved-desktop")
    page.context.close()


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_batch_from_a_prompt_version(browser, live_server, alice, catalog, size):
    from tests.prompts.conftest import make_prompt

    prompt = orm(make_prompt, alice, "summary")
    page = page_of(browser, live_server, alice, size)
    page.goto(f"/prompts/{prompt.pk}/v1/")
    no_sideways_scroll(page)
    axe.assert_accessible(page, "a prompt version")
    screenshot(page, f"prompts-version-{size}")
    page.get_by_role("link", name="Batch from v1").click()
    axe.assert_accessible(page, "batch from a prompt version")
    page.get_by_label("Variable rows").fill("topic,n\nrivers,5\nlakes,3")
    page.get_by_role("button", name="Create batch").click()
    expect(page.locator(".flash-success, [class*=flash]").first).to_contain_text("made from summary@v1")
    batch = orm(lambda: Batch.objects.get(owner=alice))
    assert batch.request_count == 2 and batch.metadata == {"prompt": "summary@v1"}
    no_sideways_scroll(page)
    page.goto("/prompts/tokens/")
    page.get_by_label("Token name").fill("laptop")
    page.get_by_role("button", name="Create token").click()
    expect(page.locator("#new-token")).to_contain_text("pgp_")
    no_sideways_scroll(page)
    screenshot(page, f"prompts-tokens-{size}")
    page.context.close()
