"""Every word of an answer is on screen before its final render (issue 24): its last words are published before
the final save and render (services/generation.py), and a first delta that reaches the tab before the send's
reply is shown at once, in the answer's placeholder the page put up as the send left (static/js/chat/stream.js). On
main the last words came only with the final render."""

import re

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

# The socket's `sent` reply is held back until the first delta of its answer has been handled: the order a send
# that hands its first delta straight to the tab can produce. The last text seen while the answer streams is noted.
REORDER = """
(function () {
  var Native = window.WebSocket;
  window.__order = { reordered: false, liveText: false };
  function Reordering(url, protocols) {
    var ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    var handler = null, held = null;
    Object.defineProperty(ws, "onmessage", { get: function () { return handler; }, set: function (fn) { handler = fn; } });
    ws.addEventListener("message", function (event) {
      if (!handler) return;
      var data = JSON.parse(event.data);
      if (data.type === "sent" && data.message_id && !held && !window.__order.reordered) { held = event; return; }
      handler.call(ws, event);
      if (held && data.type === "delta" && data.message_id === JSON.parse(held.data).message_id) {
        var reply = held;
        held = null;
        window.__order.reordered = true;
        handler.call(ws, reply);
      }
    });
    return ws;
  }
  Reordering.prototype = Native.prototype;
  ["CONNECTING", "OPEN", "CLOSING", "CLOSED"].forEach(function (k) { Reordering[k] = Native[k]; });
  window.WebSocket = Reordering;
  document.addEventListener("DOMContentLoaded", function () {
    // The text in the answer when its end comes, as the final render (ChatFinal.apply) or as the last words the
    // page finishes itself (ChatArticles.finish): a last delta and the end that arrive within one frame are applied
    // together, the delta first, and the observer below sees only the finished article.
    function before(holder, name) {
      var original = holder && holder[name];
      if (!original) return;
      holder[name] = function (article) {
        var body = article.querySelector(".message-body");
        if (body && body.textContent.trim()) window.__order.liveText = body.textContent;
        return original.apply(this, arguments);
      };
    }
    before(window.ChatFinal, "apply");
    before(window.ChatArticles, "finish");
    new MutationObserver(function () {
      var answer = document.querySelector('article[data-role="assistant"][data-status="streaming"] .message-body');
      if (answer && answer.textContent.trim()) window.__order.liveText = answer.textContent;
    }).observe(document.getElementById("thread"), { childList: true, subtree: true, characterData: true });
  });
})();
"""


def words(text: str) -> str:
    return re.sub(r"[\W_]+", "", text)


def answered(alice_page, open_chat, script: str):
    """A send of a long question on a page that runs `script` first; (the page, the answer once complete)."""
    alice_page.add_init_script(script)
    page = open_chat("local/chat")
    page.get_by_role("textbox", name="Message").fill("write 300 words about rivers")
    page.get_by_role("button", name="Send").click()
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_have_attribute("data-status", "complete", timeout=20_000)
    return page, answer


def test_every_word_is_live_before_the_final_render_even_when_the_first_delta_passes_the_reply(alice_page, open_chat):
    page, answer = answered(alice_page, open_chat, REORDER)
    order = page.evaluate("window.__order")
    assert order["reordered"], "the reply was not held back: nothing was tested"
    final = answer.locator(".message-body").inner_text()
    # Every word was on screen before the final render: none of the first delta's went missing, nor the last ones.
    assert order["liveText"] and words(order["liveText"]) == words(final)


# The first delta after the reply of a send is turned into one that comes before it, as the server sends a delta
# ready before the rows are written: named by the send frame's id, without a message id; the reply itself is held
# back for 300 ms after it. When the placeholder and the answer's first text were put on the page, and when the
# reply was let through, are noted.
EARLY = """
(function () {
  var seen = window.__early = { sendId: null, rewritten: false, placeholder: null, text: null, reply: null };
  var Native = window.WebSocket;
  function Early(url, protocols) {
    var ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    var handler = null, held = null, send = ws.send.bind(ws);
    Object.defineProperty(ws, "onmessage", { get: function () { return handler; }, set: function (fn) { handler = fn; } });
    ws.send = function (data) {
      var frame = JSON.parse(data);
      if (frame.action === "send") seen.sendId = frame.id;
      return send(data);
    };
    ws.addEventListener("message", function (event) {
      if (!handler) return;
      var data = JSON.parse(event.data);
      if (data.type === "sent" && data.id === seen.sendId && !seen.rewritten) { held = event; return; }
      if (held && data.type === "delta" && !seen.rewritten) {
        var early = Object.assign({}, data, { message_id: null, action: seen.sendId });
        handler.call(ws, { data: JSON.stringify(early) });
        seen.rewritten = true;
        var reply = held;
        held = null;
        setTimeout(function () { seen.reply = performance.now(); handler.call(ws, reply); }, 300);
        return;
      }
      handler.call(ws, event);
    });
    return ws;
  }
  Early.prototype = Native.prototype;
  ["CONNECTING", "OPEN", "CLOSING", "CLOSED"].forEach(function (k) { Early[k] = Native[k]; });
  window.WebSocket = Early;
  document.addEventListener("DOMContentLoaded", function () {
    var known = new Set(Array.from(document.querySelectorAll('article[data-role="assistant"]')).map(function (a) { return a.id; }));
    new MutationObserver(function () {
      var answer = Array.from(document.querySelectorAll('article[data-role="assistant"]')).filter(function (a) { return !known.has(a.id); })[0];
      if (!answer) return;
      if (seen.placeholder === null) seen.placeholder = performance.now();
      var body = answer.querySelector(".message-body");
      if (seen.text === null && body && body.textContent.trim()) seen.text = performance.now();
    }).observe(document.getElementById("thread"), { childList: true, subtree: true, characterData: true });
  });
})();
"""


def test_a_delta_that_comes_before_the_reply_is_shown_at_once_in_the_placeholder(alice_page, open_chat):
    page, answer = answered(alice_page, open_chat, EARLY)
    seen = page.evaluate("window.__early")
    assert seen["rewritten"], "no delta was turned into an early one: nothing was tested"
    # The placeholder was up before any answer came, and the early words went into it without waiting for the reply.
    assert seen["placeholder"] is not None and seen["text"] is not None and seen["reply"] is not None, seen
    assert seen["placeholder"] < seen["text"] < seen["reply"], seen
    # Named by its row once the reply came, the article went on and finished in place: one answer, all its words.
    assert (
        re.fullmatch(r"message-\d+", answer.get_attribute("id"))
        and int(answer.get_attribute("data-message-id")) < 9_007_199_254_740
    )
    expect(page.locator('article[data-role="assistant"]')).to_have_count(1)
    expect(page.locator('article[data-role="user"]')).to_have_count(1)
    expect(answer.locator(".message-body")).to_contain_text("rivers", ignore_case=True)


# When the page asks for the conversation list (htmx's request), against the `sent` reply, the first delta and the
# end of the answer it sent.
LIST = """
(function () {
  var seen = window.__list = { sent: null, delta: null, finished: null, asked: [] };
  var Native = window.WebSocket;
  function Watched(url, protocols) {
    var ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    ws.addEventListener("message", function (event) {
      var type = (/"type": ?"(\\w+)"/.exec(event.data.slice(0, 80)) || [])[1];
      if (type === "sent" && seen.sent === null) seen.sent = performance.now();
      if (type === "delta" && seen.delta === null) seen.delta = performance.now();
    });
    return ws;
  }
  Watched.prototype = Native.prototype;
  ["CONNECTING", "OPEN", "CLOSING", "CLOSED"].forEach(function (k) { Watched[k] = Native[k]; });
  window.WebSocket = Watched;
  var open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url) {
    if (String(url).indexOf("/c/search/") !== -1 && seen.sent !== null) seen.asked.push(performance.now());
    return open.apply(this, arguments);
  };
  document.addEventListener("chat:finished", function () { if (seen.finished === null) seen.finished = performance.now(); });
})();
"""


def test_the_conversation_list_is_asked_for_after_the_answers_first_words_not_with_them(alice_page, open_chat):
    page, _ = answered(alice_page, open_chat, LIST)
    title = "write 300 words about rivers"
    expect(page.locator("#conversation-list")).to_contain_text(title, ignore_case=True)  # the list follows the turn
    seen = page.evaluate("window.__list")
    assert seen["sent"] is not None and seen["delta"] is not None and seen["asked"], seen
    # Its request would share the server with the first deltas: it waits for the answer's end, or a quarter of a
    # second after its first words.
    asked = seen["asked"][0]
    assert asked >= seen["delta"], seen
    assert asked >= min(seen["finished"] or float("inf"), seen["delta"] + 200), seen
