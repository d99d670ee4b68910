// The stream renderer: what the chat page's websocket (socket.js) brings, snapshot + sequence replay, and deltas
// into the DOM.
//
// Finished markdown blocks arrive as sanitized HTML, the unfinished block as raw text, which markdown.js renders.
// Blocks are appended (never re-rendered) and only the tail re-rendered, so a delta costs the same however long
// the answer; DOM writes (paint.js) are batched into one animation frame. Sends and retries are htmx forms: this
// file adopts the articles they swap in, and tells the behaviours through events: chat:message on each article made
// ready, chat:state on the document when the streaming answers may have changed, chat:notice ({text}) when the
// server has words about a send, and chat:finished on an article whose answer ended (complete, stopped or failed).
(function () {
  "use strict";

  var thread = document.getElementById("thread");
  var socket = window.ChatSocket; // the connection and the actions over it (socket.js)
  if (!thread || !socket) return;
  var inner = document.getElementById("message-list") || thread;

  var messages = {}; // message id -> {seq, ready, html, queue}
  var prepared = new WeakSet();
  var dirty = new Set();
  var frameRequested = false;
  var drawnAt = -Infinity; // when the last frame() wrote to the DOM
  var FRAME_MS = 16;
  var early = {}; // message id (or "a:" + action id) -> events that came before its article
  var askedFor = {}; // action id -> the message id its `sent` named (its first deltas may pass its reply)
  var deferredStarts = [];
  var stick = true;
  // patched / replaced: final renders put in place around the body the page shows / as a whole article;
  // changedNodes: the nodes of the live tail the patched ones had to change (final.js).
  var stats = { received: 0, receivedSeq: 0, shown: 0, shownSeq: 0, frames: 0, patched: 0, replaced: 0, changedNodes: 0 };

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

  // The answers streaming on the page (a send's foreseen placeholder is not one until its reply names it).
  function streaming() {
    return Array.from(thread.querySelectorAll('article[data-status="streaming"]:not([data-foreseen])'));
  }

  // A send or retry posted by htmx (or asked over the websocket, see actions below) and not answered yet: the
  // articles it creates arrive in its response.
  function posting() {
    return socket.pending() || document.querySelector("[data-chat-post].htmx-request") !== null;
  }

  // ---------------------------------------------------------------- thread and scrolling

  thread.addEventListener("scroll", function () {
    stick = thread.scrollHeight - thread.scrollTop - thread.clientHeight < 48;
  }, { passive: true });

  function scrollToEnd() {
    thread.scrollTop = thread.scrollHeight;
  }

  // Articles that arrive by websocket (a send from another tab), as HTML or built by the page (articles.js), go in
  // message order (ids grow); new messages almost always go last. One already on the page is skipped.
  function insertArticles(html) {
    var articles = typeof html === "string" ? Array.from(parse(html).querySelectorAll("article[data-message-id]")) : html;
    var added = putInOrder(articles);
    added.forEach(prepare);
    if (added.length && stick) scrollToEnd();
    emit(document, "chat:state");
    return added;
  }

  // Puts articles in the thread in message order; returns those it put (not those already there).
  function putInOrder(articles) {
    var added = [];
    articles.forEach(function (article) {
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
    return added;
  }

  // A send over the socket: its turn shown as it leaves (articles.js), its first deltas in it even before the reply.
  function request(frame, callback) {
    var id = socket.request(frame, callback);
    var built = id && frame.action === "send" && window.ChatArticles ? window.ChatArticles.foresee(id, frame, inner) : null;
    if (built) {
      putInOrder(built);
      askedFor[id] = built[1].dataset.messageId;
      messages[askedFor[id]] = { seq: 0, ready: true, live: true, html: "", queue: window.ChatPaint.emptyQueue() };
      stick = true;
      scrollToEnd();
    }
    return id;
  }

  // The reply to an action: true when it named the foreseen turn (its answer's state now under the row's id).
  function named(data) {
    var turn = window.ChatArticles ? window.ChatArticles.named(data) : null;
    if (!turn) return false;
    var state = messages[turn.from];
    delete messages[turn.from];
    if (dirty.delete(turn.from) && turn.to) dirty.add(turn.to);
    if (!turn.to) {
      delete askedFor[data.id];
      return false;
    }
    messages[turn.to] = state;
    turn.articles.forEach(prepare);
    return true;
  }

  // What a freshly inserted article needs: its behaviours, and a subscription when it is streaming.
  function prepare(article) {
    prepared.add(article);
    if (window.htmx) window.htmx.process(article);
    emit(article, "chat:message");
    if (article.dataset.status === "streaming") subscribe(article);
  }

  function adopt() {
    thread.querySelectorAll("article[data-message-id]:not([data-foreseen])").forEach(function (article) {
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
    deferredStarts.splice(0).forEach(startArticles);
    emit(document, "chat:state");
  });

  // The articles of a `start` event: its HTML, or built from its data (articles.js); an empty list when the page
  // cannot build them (the thread is fetched then).
  function startArticles(data) {
    if (typeof data.html === "string") return insertArticles(data.html);
    var built = data.placeholder && window.ChatArticles ? window.ChatArticles.turn(data.placeholder) : null;
    if (!built) {
      syncThread();
      return [];
    }
    return insertArticles(built);
  }

  // ---------------------------------------------------------------- what the websocket brings

  // What the server sends that is not a reply to an action (socket.js).
  function heard(data) {
    // A completed retry: the answer it replaces, kept until now, leaves the page.
    if (data.type === "done" && data.replaced) {
      var replaced = articleFor(data.replaced);
      if (replaced) replaced.remove();
    }
    if (data.notice) emit(document, "chat:notice", { text: data.notice });
    receive(data);
  }

  function track(id) {
    // html: the finished blocks' HTML received so far (null until a snapshot), a prefix of the final render.
    if (!messages[id]) messages[id] = { seq: 0, ready: false, html: null, queue: window.ChatPaint.emptyQueue() };
    return messages[id];
  }

  function subscribe(article) {
    var state = track(article.dataset.messageId);
    if (state.live) {
      state.live = false; // started by this tab over this socket: it hears every delta from the first
      return;
    }
    state.ready = false;
    socket.send({ type: "subscribe", message_id: Number(article.dataset.messageId), after: state.seq });
  }

  function receive(data) {
    if (data.type === "thread") { emit(document, "chat:thread", data); return; } // see branches.js
    // A delta of this tab's own send or retry, before its rows were written: known by the action's id until the
    // reply names its message (shown at once in a foreseen placeholder, else held until the reply brings one).
    if (data.action && data.message_id == null) {
      if (!askedFor[data.action]) { hold("a:" + data.action, data); return; }
      data.message_id = askedFor[data.action];
    }
    var id = String(data.message_id);
    if (data.type === "start") {
      if (posting()) deferredStarts.push(data);
      else if (startArticles(data).length) syncThread();
      return;
    }
    if (!articleFor(id)) {
      if (data.type === "delta" || data.type === "done" || data.type === "error") hold(id, data);
      return;
    }
    if (data.type === "waiting" || data.type === "delta") window.ChatPaint.slotWait(articleFor(id), data);
    if (data.type === "waiting") return;
    var state = track(id);
    // A snapshot or delta after the answer's end (a reconnect's subscription racing the end, as when a restarting
    // server hands the socket over) must not touch the finished article.
    var finished = state.queue.final || articleFor(id).dataset.status !== "streaming";
    if ((data.type === "snapshot" || data.type === "delta") && finished) return;
    if (!window.ChatPaint.take(state, data)) return;
    if (data.type !== "snapshot") {
      stats.received = performance.now();
      stats.receivedSeq = data.seq;
    }
    dirty.add(id);
    if (frameRequested) return;
    // Nothing written since the last frame: written now, so the frame being prepared shows it. Otherwise what
    // arrives within one frame is written together, at the next.
    if (performance.now() - drawnAt >= FRAME_MS) {
      frame();
      return;
    }
    frameRequested = true;
    requestAnimationFrame(frame);
  }

  // Events of a message whose article is not on the page yet: replayed once it is (release), dropped after a while.
  function hold(id, data) {
    var held = early[id];
    if (!held) {
      held = early[id] = [];
      setTimeout(function () { delete early[id]; }, 10000);
    }
    if (held.length < 5000) held.push(data);
  }

  function release(id) {
    var held = early[id];
    if (!held) return;
    delete early[id];
    held.forEach(receive);
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
    drawnAt = performance.now();
    var follow = stick;
    var shownSeq = 0;
    dirty.forEach(function (id) {
      var state = messages[id];
      var article = articleFor(id);
      var queue = state.queue;
      state.queue = window.ChatPaint.emptyQueue();
      if (article) {
        window.ChatPaint.apply(article, queue);
        if (queue.final) finish(article, queue.final, state);
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

  // The end of an answer, put in place by final.js; a page that missed some of its deltas asks for the saved article.
  function finish(article, data, state) {
    var place = window.Playground ? window.Playground.focusPlace() : null;
    var result = window.ChatFinal.end(article, data, state);
    if (result === false) socket.send({ type: "subscribe", message_id: Number(article.dataset.messageId), after: 0 });
    if (!result) return;
    if (place) window.Playground.restoreFocus(place, result.article);
    stats[result.patched ? "patched" : "replaced"] += 1;
    if (result.patched) stats.changedNodes += result.changed;
    prepare(result.article);
    emit(result.article, "chat:finished");
  }

  // ---------------------------------------------------------------- replies to actions over the websocket
  //
  // What a reply (socket.js's request) does to the page, before its callback gets it: `sent` names or brings the new
  // articles (no subscription needed); deltas that came before it, named by the action's id, are shown with them.

  function replied(data, callback) {
    // The re-render below may take the focused button away: the focus goes back to its place (app.js).
    var place = window.Playground ? window.Playground.focusPlace() : null;
    var wasForeseen = named(data);
    if (data.type === "sent" && typeof data.thread === "string") {
      // A branch or compare action: the re-rendered thread, as its htmx POST swaps in. Its new answers started
      // before this reply, so they subscribe (a snapshot, then the deltas) like the POST's.
      inner.innerHTML = data.thread;
      adopt();
    } else if (data.type === "sent" && !data.message_id && data.message_ids) {
      // Tool results: the answer again (its calls answered), its tool messages and the next answer.
      var answer = articleFor(data.message_ids[0]);
      var again = parse(data.html).querySelector('article[data-message-id="' + data.message_ids[0] + '"]');
      if (answer && again) {
        answer.replaceWith(again);
        prepare(again);
      }
      insertArticles(data.html);
      stick = true;
      scrollToEnd();
    } else if (data.type === "sent") {
      askedFor[data.id] = data.message_id;
      setTimeout(function () { delete askedFor[data.id]; }, 60000);
      if (!wasForeseen) {
        var state = track(String(data.message_id));
        state.ready = true;
        state.live = true;
        state.seq = 0;
        state.html = "";
        if (data.replaces) {
          var old = articleFor(data.replaces);
          var fresh = parse(data.html).querySelector('article[data-message-id="' + data.replaces + '"]');
          if (old && fresh) old.replaceWith(fresh);
        }
        if (data.placeholder) startArticles(data);
        else insertArticles(data.html);
        stick = true;
        scrollToEnd();
      }
      release("a:" + data.id);
      release(String(data.message_id));
    }
    callback(data);
    if (place) window.Playground.restoreFocus(place, inner);
    if (!posting()) deferredStarts.splice(0).forEach(startArticles);
    emit(document, "chat:state");
  }

  // ---------------------------------------------------------------- start

  socket.register({
    receive: heard,
    resubscribe: function () { streaming().forEach(subscribe); },
    // The socket is gone: every message waits for a new snapshot.
    closed: function () { Object.keys(messages).forEach(function (id) { messages[id].ready = false; }); },
    replied: replied,
    // The socket closed before some replies (their callbacks got `lost`): their foreseen turns go, and the thread is
    // fetched again.
    lost: function () {
      named({ type: "lost" });
      syncThread();
    },
  });
  adopt();
  scrollToEnd();
  socket.connect();

  window.ChatClient = {
    stats: stats,
    streaming: streaming,
    posting: posting,
    // Make the articles of a thread put in place by other code live (branches.js).
    adopt: adopt,
    // A frame for the consumer (stop, subscribe); false when the socket is not open.
    send: socket.send,
    // An action over the websocket (send, retry, the branch and tool forms), answered through the callback; its id,
    // or false when the socket is not open.
    request: request,
    // Drops the websocket as a network failure would (it reconnects and resubscribes); for tests and demos.
    drop: socket.drop,
    // Skips the wait of the backoff (the connection banner's button).
    reconnect: socket.reconnect,
    // The start page became a conversation's page (start.js): its articles live, its websocket open.
    start: function () { adopt(); scrollToEnd(); socket.connect(); },
    connected: socket.connected,
  };
})();
