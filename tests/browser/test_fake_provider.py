"""A third-party provider in Chromium: the OpenAI-style fake added, refreshed and chatted with through the pages."""

import re

import pytest
from playwright.sync_api import expect

from playground.chat.models import Conversation
from playground.speech.models import SpeechClip
from tests.browser.conftest import orm, screenshot
from tests.fakeprovider import server as fake
from tests.providers.conftest import fake_connection

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DONE = 60_000
TOOLS = '[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]'
# Sets window.settingsSettled once the panel's next save has been swapped in.
SETTLED = """() => {
  window.settingsSettled = false;
  if (!window.settingsListener) {
    window.settingsListener = true;
    document.body.addEventListener("htmx:afterSettle", (event) => {
      if (/\\/settings\\/$/.test(event.detail.requestConfig?.path || "")) window.settingsSettled = true;
    });
  }
}"""


def send(page, text: str):
    answers = page.locator('article[data-role="assistant"]')
    before = answers.count()
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")
    expect(answers).to_have_count(before + 1)
    return answers.last


def choose(page, label: str, value: str) -> None:
    """Pick a connection or model in the panel and wait until the panel saved it and settled (acting on a panel
    that htmx is about to replace would lose the change)."""
    page.evaluate(SETTLED)
    page.get_by_label(label, exact=True).select_option(label=value)
    page.wait_for_function("() => window.settingsSettled === true")
    expect(page.get_by_label(label, exact=True).locator("option:checked")).to_have_text(value)


def test_add_refresh_and_chat_with_an_openai_style_provider(alice, alice_page, live_server, catalog, fake_openai):
    page = alice_page
    page.goto("/connections/")
    page.get_by_role("link", name="Add connection").click()
    page.get_by_label("Name").fill("Fake OpenAI")
    page.get_by_label("Base URL").fill(fake_openai.base_url)
    page.get_by_label("API key").fill(fake_openai.key)
    page.get_by_role("button", name="Save").click()
    card = page.locator("li.connection", has_text="Fake OpenAI")
    expect(card).to_contain_text(fake_openai.base_url)
    assert fake_openai.key not in page.content()

    card.get_by_role("link", name="Models").click()
    page.get_by_role("button", name="Refresh from provider").click()
    expect(page.get_by_text(re.compile(r"\b5 models\b"))).to_be_visible()
    table = page.get_by_role("table", name="Models")
    for model_id in fake.MODELS:
        expect(table).to_contain_text(model_id)

    # A new chat: its first message goes to the fake's connection and its plain chat model, chosen on the start
    # page (nothing is saved before that message).
    page.goto("/")
    page.get_by_role("link", name="New chat").click()
    expect(page.get_by_role("textbox", name="Message")).to_be_visible()
    page.get_by_label("Connection", exact=True).select_option(label="Fake OpenAI")
    expect(page.get_by_label("Model", exact=True).locator(f'option[value="{fake.TOOLS_MODEL}"]')).to_have_count(1)
    page.wait_for_load_state("networkidle")  # the picker's swap for the connection is in before a model is chosen
    page.get_by_label("Model", exact=True).select_option(label=fake.CHAT_MODEL)
    page.wait_for_load_state("networkidle")
    expect(page.get_by_label("Model", exact=True)).to_have_value(fake.CHAT_MODEL)
    box = page.get_by_role("textbox", name="Message")
    box.fill("tell me about rivers")
    box.press("Enter")
    page.wait_for_url("**/c/*/")
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(answer.locator(".message-body")).to_contain_text("Fake provider here. You said: tell me about rivers.")
    meta = answer.locator(".message-meta")
    expect(meta).to_contain_text("finish")
    expect(meta).to_contain_text("stop")
    expect(meta).to_contain_text("TTFT")
    sent = fake_openai.state.bodies("/chat/completions")[-1]
    assert sent["model"] == fake.CHAT_MODEL and sent["stream"] is True

    # A tool call, its arguments put back together from many fragments.
    choose(page, "Model", fake.TOOLS_MODEL)
    page.get_by_role("tab", name="Tools").click()
    page.get_by_role("textbox", name="tools").fill(TOOLS)
    page.evaluate(SETTLED)
    page.get_by_role("textbox", name="tools").press("Tab")
    page.wait_for_function("() => window.settingsSettled === true")
    page.get_by_role("tab", name="Request").click()
    expect(page.locator("#request-preview")).to_contain_text('"name": "get_weather"')
    answer = send(page, "weather in Paris")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    card = answer.locator(".tool-card")
    expect(card.locator(".tool-name")).to_have_text("get_weather")
    expect(card.locator(".tool-args")).to_contain_text('"query": "weather in Paris"')
    expect(answer.locator(".message-meta")).to_contain_text("tool_calls")
    # Its result, typed in the card, continues the turn.
    card.get_by_label("Result of get_weather").fill("18 C")
    answer.get_by_role("button", name="Send result").click()
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer.locator(".message-body")).to_contain_text("The tool answered 18 C; that settles it.", timeout=DONE)
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)

    # An error in words: the provider's 429 with the limit and when to retry.
    fake_openai.state.fail = 429
    answer = send(page, "hello again")
    expect(answer).to_have_attribute("data-status", "error", timeout=DONE)
    alert = answer.locator(".message-notice")
    expect(alert).to_contain_text("Rate limit reached (RPM)")
    expect(alert).to_contain_text("Rate limit reached for requests per minute (RPM)")
    expect(alert).to_contain_text("You hit the limit on requests per minute. Retry in 7 s.")
    expect(answer.get_by_role("button", name="Retry")).to_be_visible()
    screenshot(page, "fake-provider-chat")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "fake-provider-chat-phone")


def test_usage_is_shown_for_a_streamed_answer_of_the_fake(alice, alice_page, live_server, catalog, fake_openai):
    connection = orm(fake_connection, alice, fake_openai)
    conversation = orm(Conversation.objects.create, owner=alice, connection=connection, model_id=fake.CHAT_MODEL)
    page = alice_page
    page.goto(f"/c/{conversation.pk}/")
    page.wait_for_function("() => window.ChatClient !== undefined")
    page.wait_for_timeout(300)
    answer = send(page, "say hello")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    meta = answer.locator(".message-meta")
    expect(meta).to_contain_text("completion", timeout=2_000)
    expect(meta).to_contain_text("tok/s", timeout=2_000)


def test_a_speech_clip_of_the_fake_plays(alice, alice_page, live_server, catalog, fake_openai):
    connection = orm(fake_connection, alice, fake_openai)
    page = alice_page
    page.goto(f"/catalog/{connection.pk}/")
    page.get_by_role("button", name="Refresh from provider").click()
    expect(page.get_by_text(re.compile(r"\b5 models\b"))).to_be_visible()
    page.goto(f"/speech/?connection={connection.pk}&model={fake.SPEECH_MODEL}")
    expect(page.locator(".alert-warn")).to_have_count(0)
    page.fill("#id_input", "[S1] Hello from a third-party provider. [S2] Hi!")
    page.select_option("#id_voice", f"{fake.SPEECH_MODEL}:bella")
    page.select_option("[name=response_format]", "mp3")
    page.click("#speech-submit")
    page.wait_for_selector("audio.player")
    # The browser decoded the whole clip: its duration is the fake's 0.6 s tone.
    page.wait_for_function(
        "() => { const a = document.querySelector('audio.player'); return isFinite(a.duration) && a.duration > 0.5; }",
        timeout=30_000,
    )
    clip = orm(SpeechClip.objects.get, owner=alice)
    expect(page.locator(f"#clip-status-{clip.pk}[data-status=complete]")).to_be_attached(timeout=DONE)
    assert fake_openai.state.bodies("/audio/speech")[-1]["voice"] == f"{fake.SPEECH_MODEL}:bella"
