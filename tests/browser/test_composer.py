"""The composer and retry are htmx forms (and plain forms without JavaScript), in Chromium against the live server."""

import re
import time

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from playground.chat.models import Conversation, Message
from playground.connections.models import ensure_local_connection
from tests.browser.conftest import log_in, orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

DONE = 60_000


def posts_to(page, fragment: str) -> list:
    """The POST requests the page makes to URLs containing `fragment`, as they happen."""
    seen = []
    page.on("request", lambda r: seen.append(r) if r.method == "POST" and fragment in r.url else None)
    return seen


def frames_sent(page) -> None:
    """Record the frames the page sends on its websockets (in window.sentFrames), from now on."""
    page.evaluate(
        """() => {
            window.sentFrames = [];
            const send = WebSocket.prototype.send;
            WebSocket.prototype.send = function (data) { window.sentFrames.push(JSON.parse(data)); return send.call(this, data); };
        }"""
    )


def submit_by_form(page) -> None:
    """Send with the websocket just dropped (it reconnects half a second later): the form POST carries it."""
    page.evaluate("() => { window.ChatClient.drop(); document.getElementById('composer').requestSubmit(); }")


def mark(page) -> None:
    """A mark on the window that a page load would wipe out."""
    page.evaluate("() => { window.stillTheSamePage = true; }")


def still_the_same_page(page) -> bool:
    return page.evaluate("() => window.stillTheSamePage === true")


def test_the_composer_is_an_htmx_form_that_enter_sends_over_the_websocket_without_leaving_the_page(open_chat):
    page = open_chat()
    composer = page.locator("#composer")
    expect(composer).to_have_attribute("hx-post", re.compile(r"^/c/\d+/send/$"))
    assert composer.get_attribute("hx-post") == composer.get_attribute("action")
    sends = posts_to(page, "/send/")
    frames_sent(page)
    mark(page)
    box = page.get_by_role("textbox", name="Message")

    # Shift+Enter is a newline; Enter on a blank box sends nothing.
    box.fill("   ")
    box.press("Enter")
    box.fill("First line")
    box.press("Shift+Enter")
    box.press_sequentially("second line")
    expect(box).to_have_value("First line\nsecond line")
    page.wait_for_timeout(300)
    assert sends == []

    box.press("Enter")
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(page.locator('article[data-role="user"]')).to_contain_text("second line")
    # With the socket open, the send went over it (a send frame, the form's fields, no CSRF token), not by POST.
    assert sends == []
    frames = [f for f in page.evaluate("() => window.sentFrames") if f.get("action") == "send"]
    assert len(frames) == 1 and frames[0]["content"] == "First line\nsecond line" and frames[0]["id"]
    assert "csrfmiddlewaretoken" not in frames[0]
    assert still_the_same_page(page)
    # A clean, focused composer for the next message, and the empty state gone.
    expect(box).to_have_value("")
    expect(box).to_be_focused()
    expect(page.locator(".thread-empty")).to_be_hidden()
    screenshot(page, "composer-sent")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "composer-sent-phone")


# Holds back the `sent` reply of a send until window.releaseReply() (window.replyHeld is true while it waits).
HOLD_REPLY = """
(function () {
  var Native = window.WebSocket;
  window.replyHeld = false;
  function Holding(url, protocols) {
    var ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    var handler = null;
    Object.defineProperty(ws, "onmessage", { get: function () { return handler; }, set: function (fn) { handler = fn; } });
    ws.addEventListener("message", function (event) {
      if (!handler) return;
      var held = handler;
      if (/"type": ?"sent"/.test(event.data) && !window.releaseReply) {
        window.replyHeld = true;
        window.releaseReply = function () { window.replyHeld = false; held.call(ws, event); };
        return;
      }
      handler.call(ws, event);
    });
    return ws;
  }
  Holding.prototype = Native.prototype;
  ["CONNECTING", "OPEN", "CLOSING", "CLOSED"].forEach(function (k) { Holding[k] = Native[k]; });
  window.WebSocket = Holding;
})();
"""

STAND_IN = "900719925474"  # the digits of the ids the page gives a turn before its rows are known (stream.js)


def sent_with_reply_held(alice_page, open_chat, text: str):
    """A message sent over the socket whose `sent` reply is held back (HOLD_REPLY); (the page, the message box)."""
    alice_page.add_init_script(HOLD_REPLY)
    page = open_chat()
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")
    page.wait_for_function("() => window.replyHeld")
    return page, box


def test_the_question_and_the_answers_placeholder_show_as_the_message_leaves(alice_page, open_chat):
    page, box = sent_with_reply_held(alice_page, open_chat, "Where do rivers start?")
    # Before the server's reply: the question, the answer's placeholder, a clean box and a busy composer.
    question = page.locator('article[data-role="user"]')
    answer = page.locator('article[data-role="assistant"]')
    expect(question).to_have_count(1)
    expect(question.locator(".message-body")).to_have_text("Where do rivers start?")
    expect(answer).to_have_attribute("data-status", "streaming")
    expect(answer.locator(".message-model")).to_have_text("local/chat")
    expect(box).to_have_value("")
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    expect(page.locator(".thread-empty")).to_be_hidden()
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "composer-sent-before-reply-phone")
    page.set_viewport_size({"width": 1280, "height": 860})

    page.evaluate("() => window.releaseReply()")
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    saved = orm(lambda: list(Message.objects.order_by("pk").values_list("pk", "role")))
    assert [role for _, role in saved] == ["user", "assistant"]
    # Named by the rows: no stand-in digits left anywhere in the articles, and their forms work (the answer's Regenerate).
    expect(question).to_have_attribute("id", f"message-{saved[0][0]}")
    expect(answer).to_have_attribute("id", f"message-{saved[1][0]}")
    assert STAND_IN not in page.locator("#message-list").inner_html()
    answer.get_by_role("button", name="Regenerate").click()
    again = page.locator(f'article[data-role="assistant"]:not(#message-{saved[1][0]})')
    expect(again).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(page.locator('article[data-role="assistant"]')).to_have_count(1)
    assert orm(Message.objects.filter(role="assistant").count) == 2


@pytest.mark.console_errors(r"WebSocket")
def test_a_send_whose_reply_is_lost_puts_the_message_back_and_shows_what_was_saved(alice_page, open_chat):
    page, box = sent_with_reply_held(alice_page, open_chat, "Lost on the way back")
    expect(page.locator('article[data-role="user"]')).to_have_count(1)
    page.evaluate("() => window.ChatClient.drop()")
    expect(page.locator(".composer-errors")).to_have_text(
        "The connection dropped while sending: check the thread before sending again."
    )
    expect(box).to_have_value("Lost on the way back")
    # The server had saved the turn: the thread comes back with it, once.
    question = page.locator('article[data-role="user"]')
    expect(question).to_have_count(1)
    expect(question).to_have_attribute("id", re.compile(r"^message-\d+$"))
    answer = page.locator('article[data-role="assistant"]')
    expect(answer).to_have_count(1)
    assert STAND_IN not in page.locator("#message-list").inner_html()
    # and the answer, followed over the new socket, to its end
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)


def replies_received(page) -> None:
    """Record the replies to the page's actions over the websocket (in window.replies), from now on."""
    page.evaluate(
        """() => {
            window.replies = [];
            const request = window.ChatClient.request;
            window.ChatClient.request = (frame, callback) => request(frame, (reply) => {
                window.replies.push(reply);
                if (callback) callback(reply);
            });
        }"""
    )


def test_every_send_starts_its_upstream_call_before_its_rows(open_chat):
    page = open_chat()
    frames_sent(page)
    replies_received(page)
    box = page.get_by_role("textbox", name="Message")
    answers = page.locator('article[data-role="assistant"]')
    box.fill("Write 5 words")
    box.press("Enter")
    expect(answers.last).to_have_attribute("data-status", "complete", timeout=DONE)
    box.press_sequentially("Write 6 words", delay=20)
    box.press("Enter")
    expect(answers).to_have_count(2)
    expect(answers.last).to_have_attribute("data-status", "complete", timeout=DONE)

    frames = page.evaluate("() => window.sentFrames")
    assert len([f for f in frames if f.get("action") == "send"]) == 2
    assert not [f for f in frames if f.get("type") == "warm"]  # no speculative frame: the send itself starts early
    sent = [r for r in page.evaluate("() => window.replies") if r["type"] == "sent"]
    assert len(sent) == 2 and all(r["early"] is True for r in sent)


def test_the_send_button_is_off_while_an_answer_streams_and_enter_then_sends_nothing(open_chat):
    page = open_chat()
    box = page.get_by_role("textbox", name="Message")
    box.fill("Write 3000 words about oceans")
    box.press("Enter")
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_have_attribute("data-status", "streaming")
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    expect(page.locator("#composer")).to_have_attribute("aria-busy", "true")
    sends = posts_to(page, "/send/")
    box.fill("Another question")
    box.press("Enter")
    page.wait_for_timeout(300)
    assert sends == []
    page.get_by_role("button", name="Stop").click()
    expect(answer).to_have_attribute("data-status", "stopped", timeout=15_000)
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    expect(box).to_have_value("Another question")


def test_with_the_websocket_down_the_composer_posts_the_form(open_chat):
    page = open_chat()
    sends = posts_to(page, "/send/")
    frames_sent(page)
    page.get_by_role("textbox", name="Message").fill("Sent by the form")
    submit_by_form(page)
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(page.locator('article[data-role="user"]')).to_contain_text("Sent by the form")
    assert len(sends) == 1 and sends[0].headers.get("hx-request") == "true"
    assert not [f for f in page.evaluate("() => window.sentFrames") if f.get("action") == "send"]


def test_a_refused_send_over_the_websocket_names_the_field_and_the_limit(open_chat):
    page = open_chat()
    box = page.get_by_role("textbox", name="Message")
    sends = posts_to(page, "/send/")
    page.evaluate("() => { document.getElementById('composer-input').removeAttribute('maxlength'); }")
    box.fill("x" * 200_001)
    box.press("Enter")
    expect(page.locator(".composer-errors")).to_have_text("Message: at most 200,000 characters (it has 200001).")
    expect(box).to_have_value("x" * 200_001)
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    assert sends == [] and orm(Message.objects.count) == 0
    # The question and placeholder the page put up as the message left went with the refusal.
    expect(page.locator("article[data-message-id]")).to_have_count(0)
    expect(page.locator(".thread-empty")).to_be_visible()
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "composer-refused-over-socket-phone")


@pytest.mark.console_errors(
    r"Response Status Error Code 500", r"htmx:afterRequest", r"htmx:sendError", r"Failed to load resource"
)
def test_a_failed_send_keeps_the_message_and_says_what_happened(open_chat):
    page = open_chat()
    box = page.get_by_role("textbox", name="Message")
    page.route("**/send/", lambda route: route.fulfill(status=500, body="boom"))
    box.fill("Keep me")
    submit_by_form(page)
    expect(page.locator(".composer-errors")).to_have_text(
        "Could not send (HTTP 500). Your message is still here; try again."
    )
    expect(box).to_have_value("Keep me")
    page.unroute("**/send/")
    page.route("**/send/", lambda route: route.abort())
    page.wait_for_timeout(800)  # the socket is back; drop it again
    submit_by_form(page)
    expect(page.locator(".composer-errors")).to_have_text(
        "Could not reach the server. Your message is still here; try again."
    )
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    assert orm(Message.objects.count) == 0


def stopped_answer(alice):
    conversation = Conversation.objects.create(
        owner=alice, connection=ensure_local_connection(alice), model_id="local/chat"
    )
    Message.objects.create(conversation=conversation, role="user", content="What is 2 + 2?")
    stopped = Message.objects.create(
        conversation=conversation, role="assistant", status=Message.STOPPED, content="It is"
    )
    return conversation, stopped


@pytest.mark.console_errors(r"Response Status Error Code 503", r"Failed to load resource")
def test_retry_is_an_htmx_form_and_a_refused_retry_says_why(alice, alice_page):
    orm(call_command, "seed_catalog", verbosity=0)
    conversation, stopped = orm(stopped_answer, alice)
    page = alice_page
    page.goto(f"/c/{conversation.pk}/")
    page.wait_for_function("() => window.ChatClient !== undefined")
    old = page.locator(f"#message-{stopped.pk}")
    retry = old.get_by_role("button", name="Retry")
    expect(old.locator("form.retry-form")).to_have_attribute(
        "hx-post", f"/c/{conversation.pk}/messages/{stopped.pk}/retry/"
    )

    page.route("**/retry/", lambda route: route.fulfill(status=503, body="The live channel is down; try again."))
    retry.click()
    expect(old.locator(".countdown")).to_have_text("The live channel is down; try again.")
    expect(retry).to_be_enabled()
    page.unroute("**/retry/")

    retries = posts_to(page, "/retry/")
    mark(page)
    retry.click()
    new = page.locator('article[data-role="assistant"]').last
    expect(new).not_to_have_attribute("data-message-id", str(stopped.pk))
    expect(new).to_have_attribute("data-status", "complete", timeout=DONE)
    expect(page.locator(f"#message-{stopped.pk}")).to_have_count(0)
    assert len(retries) == 1 and retries[0].headers.get("hx-request") == "true"
    assert still_the_same_page(page)


@pytest.fixture
def no_js_page(browser, live_server, client, alice):
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    context.set_default_timeout(15_000)
    log_in(context, client, alice)
    yield context.new_page()
    context.close()


def wait_for_answer(conversation) -> Message:
    for _ in range(300):
        answer = orm(conversation.messages.filter(role="assistant").last)
        if answer and answer.status != Message.STREAMING:
            return answer
        time.sleep(0.2)
    raise AssertionError("the answer did not finish")


def test_without_javascript_the_composer_and_retry_post_and_come_back(alice, no_js_page):
    orm(call_command, "seed_catalog", verbosity=0)
    page = no_js_page
    # The start page creates the conversation with its first message.
    page.goto("/")
    page.get_by_role("textbox", name="Message").fill("What is 6 * 7?")
    page.get_by_role("button", name="Send").click()
    page.wait_for_url(re.compile(r"/c/\d+/$"))
    conversation = orm(Conversation.objects.get, owner=alice)
    assert wait_for_answer(conversation).status == Message.COMPLETE

    # In a conversation: the message, then the answer once the page is loaded again.
    page.get_by_role("textbox", name="Message").fill("What is 12 + 30?")
    page.get_by_role("button", name="Send").click()
    page.wait_for_url(f"**/c/{conversation.pk}/")
    expect(page.locator('article[data-role="user"]').last).to_contain_text("What is 12 + 30?")
    answer = wait_for_answer(conversation)
    assert answer.status == Message.COMPLETE and "42" in answer.content
    page.reload()
    expect(page.locator('article[data-role="assistant"]').last.locator(".message-body")).to_contain_text("42")

    # Retry of a stopped answer is a plain form too.
    answer.status = Message.STOPPED
    orm(answer.save)
    page.reload()
    page.get_by_role("button", name="Retry").click()
    page.wait_for_url(f"**/c/{conversation.pk}/")
    retried = wait_for_answer(conversation)
    assert retried.pk != answer.pk and retried.status == Message.COMPLETE
    assert not orm(Message.objects.filter(pk=answer.pk).exists)
    screenshot(page, "composer-no-javascript")


def test_stop_goes_through_the_stop_view_while_the_websocket_is_down(open_chat):
    page = open_chat()
    box = page.get_by_role("textbox", name="Message")
    box.fill("Write 3000 words about canyons")
    box.press("Enter")
    answer = page.locator('article[data-role="assistant"]').last
    page.wait_for_function("node => node.innerText.length > 50", arg=answer.locator(".message-body").element_handle())
    stops = posts_to(page, "/stop/")
    # The socket reconnects after half a second: Stop is pressed before that.
    page.evaluate("() => { window.ChatClient.drop(); document.getElementById('stop-button').click(); }")
    expect(answer).to_have_attribute("data-status", "stopped", timeout=15_000)
    assert len(stops) == 1 and stops[0].headers.get("hx-request") == "true"
    assert stops[0].url.endswith(f"/messages/{answer.get_attribute('data-message-id')}/stop/")


def test_the_retry_of_an_answer_that_failed_while_watched_is_an_htmx_form_too(open_chat):
    """The failed answer's final render arrived over the websocket: its retry form was made live by htmx then."""
    page = open_chat()
    box = page.get_by_role("textbox", name="Message")
    box.fill("Write 300 words about lakes [fault:drop-after-5]")
    box.press("Enter")
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_have_attribute("data-status", "error", timeout=DONE)
    retries = posts_to(page, "/retry/")
    mark(page)
    answer.get_by_role("button", name="Retry").click()
    expect(page.locator('article[data-role="assistant"]')).to_have_count(2)
    expect(page.locator('article[data-role="assistant"]').last).to_have_attribute("data-status", "error", timeout=DONE)
    assert len(retries) == 1 and retries[0].headers.get("hx-request") == "true"
    assert still_the_same_page(page)
