// The stream renderer: the chat page's websocket, snapshot + sequence replay, and deltas into the DOM.
//
// The server sends finished markdown blocks as sanitized HTML and the unfinished block as raw text. Blocks are
// appended (never re-rendered) and the tail is set as text, so the cost of a delta does not grow with the answer
// already shown. DOM writes are batched into one animation frame. Forms (send, retry) are htmx; this file only
// adopts the articles they swap in. Other behaviours hear about it through events:
//   chat:message  on each article made ready (countdowns, the wait counter),
//   chat:state    on the document when the set of streaming answers may have changed (the composer),
//   chat:notice   on the document with {text} when the server has something to say about a send.
(function () {
  "use strict";

  var thread = document.getElementById("thread");
  if (!thread) return;
  var inner = document.getElementById("message-list") || thread;

  var messages = {}; // message id -> {seq, ready, html, queue}
  var prepared = new WeakSet();
  var dirty = new Set();
  var frameRequested = false;
  var socket = null;
  var backoff = 500;
  var deferredStarts = [];
  var stick = true;
  var stats = { received: 0, receivedSeq: 0, shown: 0, shownSeq: 0, frames: 0, patched: 0, replaced: 0 };

  function parse(html) {
    var template = document.createElement("template");
    template.innerHTML = html.trim();
    return template.content;
  }

  function emit(target, name, detail) {
    target.dispatchEvent(new CustomEvent(name, { bubbles: true, detail: detail || {} }));
  }

  function articleFor(id) {
    return document.getElementById("message-" + id);
  }

  function streaming() {
    return Array.prototype.slice.call(thread.querySelectorAll('article[data-status="streaming"]'));
  }

  // A send or retry posted by htmx and not answered yet: the articles it creates arrive in its response.
  function posting() {
    return document.querySelector("[data-chat-post].htmx-request") !== null;
  }

  // ---------------------------------------------------------------- thread and scrolling

  thread.addEventListener("scroll", function () {
    stick = thread.scrollHeight - thread.scrollTop - thread.clientHeight < 48;
  }, { passive: true });

  function scrollToEnd() {
    thread.scrollTop = thread.scrollHeight;
  }

  // Articles that arrive by websocket (a send from another tab) go in message order (ids grow); new messages
  // almost always go last. One already on the page is skipped.
  function insertArticles(html) {
    var added = [];
    Array.prototype.slice.call(parse(html).querySelectorAll("article[data-message-id]")).forEach(function (article) {
      if (articleFor(article.dataset.messageId)) return;
      var id = Number(article.dataset.messageId);
      var next = null;
      var node = inner.lastElementChild;
      while (node && node.dataset && Number(node.dataset.messageId) > id) {
        next = node;
        node = node.previousElementSibling;
      }
      inner.insertBefore(article, next);
      added.push(article);
    });
    added.forEach(prepare);
    if (added.length && stick) scrollToEnd();
    emit(document, "chat:state");
    return added;
  }

  // What a freshly inserted article needs: its behaviours, and a subscription when it is streaming.
  function prepare(article) {
    prepared.add(article);
    if (window.htmx) window.htmx.process(article);
    emit(article, "chat:message");
    if (article.dataset.status === "streaming") subscribe(article);
  }

  function adopt() {
    thread.querySelectorAll("article[data-message-id]").forEach(function (article) {
      if (!prepared.has(article)) prepare(article);
    });
    emit(document, "chat:state");
  }

  // htmx swapped in what a send or retry returned: make the new articles live, and follow the thread.
  document.addEventListener("htmx:afterSwap", function (event) {
    var elt = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (!elt || !elt.hasAttribute("data-chat-post")) return;
    adopt();
    if (elt.id === "composer" && event.detail.target === inner) {
      stick = true;
      scrollToEnd();
    }
  });

  // Starts held back while a post was in flight: those of that post are on the page by now, and are skipped.
  document.addEventListener("htmx:afterRequest", function (event) {
    if (!event.target.hasAttribute || !event.target.hasAttribute("data-chat-post") || posting()) return;
    deferredStarts.splice(0).forEach(insertArticles);
    emit(document, "chat:state");
  });

  // ---------------------------------------------------------------- websocket

  function connect() {
    if (!thread.dataset.wsUrl) return;
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var ws = new WebSocket(scheme + location.host + thread.dataset.wsUrl);
    ws.onopen = function () {
      socket = ws;
      backoff = 500;
      streaming().forEach(subscribe);
    };
    ws.onmessage = function (event) {
      var data;
      try { data = JSON.parse(event.data); } catch (e) { return; }
      // A completed retry: the answer it replaces, kept until now, leaves the page.
      if (data.type === "done" && data.replaced) {
        var replaced = articleFor(data.replaced);
        if (replaced) replaced.remove();
      }
      if (data.notice) emit(document, "chat:notice", { text: data.notice });
      receive(data);
    };
    ws.onclose = function (event) {
      if (socket === ws) socket = null;
      Object.keys(messages).forEach(function (id) { messages[id].ready = false; });
      if (event.code === 4403 || event.code === 4404) return;
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 8000);
    };
  }

  function sendJSON(data) {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify(data));
      return true;
    }
    return false;
  }

  function track(id) {
    // html: the finished blocks' HTML received so far (null until a snapshot), a prefix of the final render.
    if (!messages[id]) messages[id] = { seq: 0, ready: false, html: null, queue: emptyQueue() };
    return messages[id];
  }

  function emptyQueue() {
    return { snapshot: null, blocks: [], tail: null, reasoning: [], final: null };
  }

  function subscribe(article) {
    var state = track(article.dataset.messageId);
    state.ready = false;
    sendJSON({ type: "subscribe", message_id: Number(article.dataset.messageId), after: state.seq });
  }

  function receive(data) {
    var id = String(data.message_id);
    if (data.type === "start") {
      if (posting()) deferredStarts.push(data.html);
      else if (insertArticles(data.html).length) syncThread();
      return;
    }
    if (!articleFor(id)) return;
    var state = track(id);
    var queue = state.queue;
    if (data.type === "snapshot") {
      state.ready = true;
      state.seq = data.seq;
      state.html = data.blocks.join("");
      queue.snapshot = data;
      queue.blocks = [];
      queue.tail = null;
      queue.reasoning = [];
    } else if (data.type === "delta") {
      // Before its snapshot, a message's deltas are already part of what the snapshot will bring.
      if (!state.ready || data.seq <= state.seq) return;
      state.seq = data.seq;
      if (data.blocks && data.blocks.length) {
        Array.prototype.push.apply(queue.blocks, data.blocks);
        state.html += data.blocks.join("");
      }
      if (typeof data.tail === "string") queue.tail = data.tail;
      if (data.reasoning) queue.reasoning.push(data.reasoning);
      stats.received = performance.now();
      stats.receivedSeq = data.seq;
    } else if (data.type === "done" || data.type === "error") {
      queue.final = data.html;
      stats.received = performance.now();
      stats.receivedSeq = data.seq;
    } else {
      return;
    }
    dirty.add(id);
    if (!frameRequested) {
      frameRequested = true;
      requestAnimationFrame(frame);
    }
  }

  // A generation started in another tab: its question is not in this one yet, so fetch what is missing.
  function syncThread() {
    fetch(location.pathname, { credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : ""; })
      .then(function (html) {
        var articles = parse(html).querySelectorAll("#thread article[data-message-id]");
        insertArticles(Array.prototype.map.call(articles, function (a) { return a.outerHTML; }).join(""));
      });
  }

  // ---------------------------------------------------------------- deltas into the DOM

  function frame() {
    frameRequested = false;
    var follow = stick;
    var shownSeq = 0;
    dirty.forEach(function (id) {
      var state = messages[id];
      var article = articleFor(id);
      var queue = state.queue;
      state.queue = emptyQueue();
      if (article) {
        apply(article, queue, state);
        shownSeq = Math.max(shownSeq, state.seq);
      }
    });
    dirty.clear();
    if (follow) scrollToEnd();
    stats.frames += 1;
    stats.shown = performance.now();
    stats.shownSeq = shownSeq;
    emit(document, "chat:state");
  }

  function apply(article, queue, state) {
    var body = article.querySelector(".message-body");
    var blocks = body && body.querySelector(".blocks");
    var tail = body && body.querySelector(".tail");
    var thinking = article.querySelector(".thinking");
    var thinkingText = thinking && thinking.querySelector(".thinking-text");
    if (queue.snapshot) {
      if (blocks) blocks.innerHTML = queue.snapshot.blocks.join("");
      if (tail) tail.textContent = queue.snapshot.tail || "";
      if (thinkingText) thinkingText.textContent = queue.snapshot.reasoning || "";
    }
    if (blocks && queue.blocks.length) blocks.insertAdjacentHTML("beforeend", queue.blocks.join(""));
    if (tail && queue.tail !== null) tail.textContent = queue.tail;
    if (thinkingText && queue.reasoning.length) thinkingText.appendChild(document.createTextNode(queue.reasoning.join("")));
    if (thinking && thinkingText && thinking.hidden && thinkingText.firstChild) thinking.hidden = false;
    var waiting = article.querySelector(".waiting");
    if (waiting && ((blocks && blocks.firstChild) || (tail && tail.firstChild) || (thinkingText && thinkingText.firstChild))) {
      waiting.hidden = true;
    }
    if (queue.final) finish(article, queue.final, state.html);
  }

  // The final render replaces the article's header, thinking, meta and error parts; the body the user has been
  // reading stays in place and only gains the last block, so a long answer is neither parsed nor laid out again.
  // The blocks already shown are cut out of the final HTML before parsing when they are its exact prefix.
  var BLOCKS = '<div class="blocks">';
  function finish(article, html, live) {
    var oldBody = article.querySelector(".message-body");
    var oldBlocks = oldBody && oldBody.querySelector(".blocks");
    if (live === null && oldBlocks && !oldBlocks.firstChild) live = "";
    var at = html.indexOf(BLOCKS) + BLOCKS.length;
    var prefix = oldBlocks && live !== null && at >= BLOCKS.length && html.substr(at, live.length) === live;
    var fresh = parse(prefix ? html.slice(0, at) + html.slice(at + live.length) : html).querySelector("article");
    if (!fresh) return;
    var newBody = fresh.querySelector(".message-body");
    var newBlocks = newBody && newBody.querySelector(".blocks");
    if (!prefix || !newBlocks) {
      stats.replaced += 1;
      article.replaceWith(fresh);
      prepare(fresh);
      return;
    }
    stats.patched += 1;
    var fragment = document.createDocumentFragment();
    while (newBlocks.firstChild) fragment.appendChild(newBlocks.firstChild);
    oldBlocks.appendChild(fragment);
    oldBody.querySelector(".tail").textContent = "";
    oldBody.hidden = newBody.hidden;
    Array.prototype.slice.call(article.childNodes).forEach(function (node) {
      if (node !== oldBody) node.remove();
    });
    var before = true;
    Array.prototype.slice.call(fresh.childNodes).forEach(function (node) {
      if (node === newBody) { before = false; return; }
      if (before) article.insertBefore(node, oldBody);
      else article.appendChild(node);
    });
    Array.prototype.slice.call(article.attributes).forEach(function (attribute) {
      if (!fresh.hasAttribute(attribute.name)) article.removeAttribute(attribute.name);
    });
    Array.prototype.slice.call(fresh.attributes).forEach(function (attribute) {
      article.setAttribute(attribute.name, attribute.value);
    });
    prepare(article);
  }

  // ---------------------------------------------------------------- stop

  // Over the websocket when it is up (the generator's process hears it at once), else the stop view.
  function stop() {
    streaming().forEach(function (article) {
      var sent = sendJSON({ type: "stop", message_id: Number(article.dataset.messageId) });
      if (!sent && article.dataset.stopUrl && window.htmx) {
        window.htmx.ajax("POST", article.dataset.stopUrl, { source: article, swap: "none" });
      }
    });
  }

  // ---------------------------------------------------------------- start

  adopt();
  scrollToEnd();
  connect();

  window.ChatClient = {
    stats: stats,
    stop: stop,
    streaming: streaming,
    posting: posting,
    // Drops the websocket as a network failure would (it reconnects and resubscribes); for tests and demos.
    drop: function () { if (socket) socket.close(); },
  };
})();
