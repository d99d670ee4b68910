// The viewer's side of a live share link: a read-only websocket that appends new turns and streams answers in.
// Protocol (playground/chat/sharing/consumer.py): append, thread, snapshot, delta, done, error, updated, revoked.
// "thread" carries the owner's path in order after a branch operation: the page drops what is not on it.
(function () {
  "use strict";

  var thread = document.getElementById("share-thread");
  if (!thread || !thread.dataset.wsUrl) return;
  var ended = false;
  var retry = 1000;

  function article(id) { return document.getElementById("message-" + id); }

  function setBody(node, blocks, tail, reasoning, replace) {
    var body = node.querySelector(".message-body");
    if (!body) return;
    var blockNode = body.querySelector(".blocks");
    var tailNode = body.querySelector(".tail");
    var thinking = node.querySelector(".thinking");
    if (replace) blockNode.innerHTML = blocks.join("");
    else if (blocks.length) blockNode.insertAdjacentHTML("beforeend", blocks.join(""));
    if (typeof tail === "string") tailNode.textContent = tail;
    if (thinking && reasoning) {
      thinking.hidden = false;
      var text = thinking.querySelector(".thinking-text");
      if (replace) text.textContent = reasoning; else text.appendChild(document.createTextNode(reasoning));
    }
  }

  function place(id, html) {
    var existing = article(id);
    if (existing) { existing.outerHTML = html; return; }
    var empty = document.getElementById("share-empty");
    if (empty) empty.remove();
    thread.insertAdjacentHTML("beforeend", html);
    var added = article(id);
    if (added) added.scrollIntoView({ block: "end", behavior: "smooth" });
  }

  function follow(ids) {
    var keep = {};
    ids.forEach(function (id) { keep[String(id)] = true; });
    thread.querySelectorAll(".message").forEach(function (node) {
      if (!keep[node.dataset.messageId]) node.remove();
    });
    ids.forEach(function (id) { var node = article(id); if (node) thread.appendChild(node); });
  }

  // The header's count follows the thread as turns are appended (or a branch operation changes the path).
  function recount() {
    var count = document.getElementById("share-count");
    if (!count) return;
    var n = thread.querySelectorAll(".message").length;
    count.textContent = n + (n === 1 ? " message" : " messages");
  }

  function end(message) {
    ended = true;
    var banner = document.getElementById("share-ended");
    if (banner) { if (message) banner.textContent = message; banner.hidden = false; }
    var status = document.getElementById("share-live-status");
    if (status) status.hidden = true;
    thread.dataset.ended = "true";
  }

  function handle(data) {
    var node = data.message_id ? article(data.message_id) : null;
    // A snapshot or delta that comes after its answer's end (a reconnect's subscription racing the end, as when a
    // restarting server hands the socket over) must not add to the finished article.
    if (node && (data.type === "snapshot" || data.type === "delta") && node.dataset.status !== "streaming") node = null;
    if (data.type === "append") place(data.message_id, data.html);
    else if (data.type === "thread") follow(data.ids || []);
    else if (data.type === "snapshot" && node) setBody(node, data.blocks || [], data.tail, data.reasoning, true);
    else if (data.type === "delta" && node) setBody(node, data.blocks || [], data.tail, data.reasoning, false);
    else if (data.type === "done" || data.type === "error") {
      if (data.replaced && article(data.replaced)) article(data.replaced).remove();
      place(data.message_id, data.html);
    } else if (data.type === "updated") {
      var updated = document.getElementById("share-updated");
      if (updated) updated.hidden = false;
    } else if (data.type === "revoked") end();
    if (data.type === "append" || data.type === "thread" || data.type === "done" || data.type === "error") recount();
  }

  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var socket = new WebSocket(scheme + location.host + thread.dataset.wsUrl);
    socket.addEventListener("open", function () {
      retry = 1000;
      thread.dataset.live = "open";
      var last = 0;
      var have = [];
      thread.querySelectorAll(".message").forEach(function (node) {
        have.push(Number(node.dataset.messageId));
        last = Math.max(last, Number(node.dataset.messageId));
        if (node.dataset.status === "streaming") {
          socket.send(JSON.stringify({ type: "subscribe", message_id: Number(node.dataset.messageId), after: 0 }));
        }
      });
      socket.send(JSON.stringify({ type: "since", after: Math.max(last, Number(thread.dataset.last || 0)), have: have }));
    });
    socket.addEventListener("message", function (event) {
      try { handle(JSON.parse(event.data)); } catch (e) { /* a malformed frame is ignored */ }
    });
    socket.addEventListener("close", function (event) {
      thread.dataset.live = "closed";
      if (event.code === 4404) { end(); return; }
      // 4012: the server is restarting (playground/lib/drain.py); come back at once, to another process.
      var wait = event.code === 4012 && retry <= 1000 ? 100 + Math.random() * 200 : retry;
      if (!ended) { setTimeout(connect, wait); retry = Math.min(retry * 2, 30000); }
    });
  }

  connect();
})();
