"""Every word of an answer is on screen before its final render (issue 24): its last words are published before
the final save and render (services/generation.py), and a first delta that reaches the tab before the send's
reply (the article it goes into) is kept and shown once the reply is in (static/js/chat/stream.js). On main the
last words came only with the final render."""

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
    // The text in the answer when the final render comes (a last delta and the final render that arrive within
    // one frame are applied together, the delta first: the observer below sees only the final one).
    var final = window.ChatFinal, apply = final && final.apply;
    if (apply) {
      final.apply = function (article) {
        var body = article.querySelector(".message-body");
        if (body && body.textContent.trim()) window.__order.liveText = body.textContent;
        return apply.apply(this, arguments);
      };
    }
    new MutationObserver(function () {
      var answer = document.querySelector('article[data-role="assistant"][data-status="streaming"] .message-body');
      if (answer && answer.textContent.trim()) window.__order.liveText = answer.textContent;
    }).observe(document.getElementById("thread"), { childList: true, subtree: true, characterData: true });
  });
})();
"""


def words(text: str) -> str:
    return re.sub(r"[\W_]+", "", text)


def test_every_word_is_live_before_the_final_render_even_when_the_first_delta_passes_the_reply(alice_page, open_chat):
    alice_page.add_init_script(REORDER)
    page = open_chat("local/chat")
    page.get_by_role("textbox", name="Message").fill("write 300 words about rivers")
    page.get_by_role("button", name="Send").click()
    answer = page.locator('article[data-role="assistant"]').last
    expect(answer).to_have_attribute("data-status", "complete", timeout=20_000)
    order = page.evaluate("window.__order")
    assert order["reordered"], "the reply was not held back: nothing was tested"
    final = answer.locator(".message-body").inner_text()
    # Every word was on screen before the final render: none of the first delta's went missing, nor the last ones.
    assert order["liveText"] and words(order["liveText"]) == words(final)
