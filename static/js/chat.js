// The chat page: websocket relay client, composer, stop/retry, and the parameter panel's small behaviours.
//
// Streaming protocol (see chat-contract.md): the server sends finished markdown blocks as sanitized HTML and the
// unfinished block as raw text. Blocks are appended (never re-rendered) and the tail is set as text, so the cost
// of a delta does not grow with the answer already shown. DOM writes are batched into one animation frame.
(function () {
  "use strict";

  var thread = document.getElementById("thread");
  if (!thread) return;
  var inner = thread.querySelector(".thread-inner") || thread;
  var workspace = document.getElementById("chat-workspace");

  var messages = {}; // message id -> {seq, ready, queue}
  var dirty = new Set();
  var frameRequested = false;
  var socket = null;
  var backoff = 500;
  var sending = false;
  var deferredStarts = [];
  var stick = true;
  var stats = { received: 0, receivedSeq: 0, shown: 0, shownSeq: 0, frames: 0, patched: 0, replaced: 0 };

  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (e) {
      var input = document.querySelector("input[name=csrfmiddlewaretoken]");
      return input ? input.value : "";
    }
  }

  // Form fields are sent url-encoded (an empty multipart body is rejected by Django with a 400); with files, as
  // multipart. The files come from `files` (the composer's chosen files), never from the file input itself.
  function post(url, form, files) {
    var data = new FormData(form || undefined);
    data.delete("attachments");
    (files || []).forEach(function (file) { data.append("attachments", file, file.name); });
    return fetch(url, {
      method: "POST",
      body: files && files.length ? data : new URLSearchParams(data),
      credentials: "same-origin",
      headers: { "HX-Request": "true", "X-CSRFToken": csrfToken() },
    });
  }

  function parse(html) {
    var template = document.createElement("template");
    template.innerHTML = html.trim();
    return template.content;
  }

  // ---------------------------------------------------------------- thread and scrolling

  thread.addEventListener("scroll", function () {
    stick = thread.scrollHeight - thread.scrollTop - thread.clientHeight < 48;
  }, { passive: true });

  function scrollToEnd() {
    thread.scrollTop = thread.scrollHeight;
  }

  function articleFor(id) {
    return document.getElementById("message-" + id);
  }

  function insertArticles(html) {
    var fragment = parse(html);
    var added = [];
    Array.prototype.slice.call(fragment.querySelectorAll("article[data-message-id]")).forEach(function (article) {
      if (articleFor(article.dataset.messageId)) return;
      var empty = inner.querySelector(".thread-empty");
      if (empty) empty.remove();
      // Keep the thread in message order (ids grow); new messages almost always go last.
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
    if (added.length && (stick || sending)) {
      stick = true;
      scrollToEnd();
    }
    updateComposer();
    return added;
  }

  // Behaviours a freshly inserted article needs: countdowns, and a subscription when it is streaming.
  function prepare(article) {
    startCountdowns(article);
    startWaiting(article);
    if (window.htmx) window.htmx.process(article);
    if (article.dataset.status === "streaming") subscribe(article);
  }

  // "Waiting for the first token… 12 s": one ticking counter for every answer still waiting.
  var waitingTimer = null;
  function startWaiting(article) {
    var waiting = article.querySelector(".waiting[data-waited]");
    if (!waiting || waiting.dataset.since) return;
    waiting.dataset.since = String(Date.now() - Number(waiting.dataset.waited || 0) * 1000);
    if (!waitingTimer) waitingTimer = setInterval(tickWaiting, 1000);
  }
  function tickWaiting() {
    var counters = thread.querySelectorAll('article[data-status="streaming"] .waiting[data-since]');
    if (!counters.length) {
      clearInterval(waitingTimer);
      waitingTimer = null;
      return;
    }
    counters.forEach(function (waiting) {
      var shown = waiting.querySelector(".waited");
      if (shown && !waiting.hidden) shown.textContent = Math.floor((Date.now() - Number(waiting.dataset.since)) / 1000) + " s";
    });
  }

  // ---------------------------------------------------------------- websocket

  function connect() {
    if (!thread.dataset.wsUrl) return;
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var ws = new WebSocket(scheme + location.host + thread.dataset.wsUrl);
    ws.onopen = function () {
      socket = ws;
      backoff = 500;
      thread.querySelectorAll('article[data-status="streaming"]').forEach(subscribe);
    };
    ws.onmessage = function (event) {
      var data;
      try { data = JSON.parse(event.data); } catch (e) { return; }
      // A completed retry: the answer it replaces, kept until now, leaves the page.
      if (data.type === "done" && data.replaced) {
        var replaced = articleFor(data.replaced);
        if (replaced) replaced.remove();
      }
      if (data.notice) showComposerError(data.notice);
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
      if (sending) deferredStarts.push(data.html);
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
    updateComposer();
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

  // ---------------------------------------------------------------- composer

  function composer() { return document.getElementById("composer"); }

  function streaming() {
    return Array.prototype.slice.call(thread.querySelectorAll('article[data-status="streaming"]'));
  }

  function updateComposer() {
    var form = composer();
    if (!form) return;
    var running = streaming().length > 0;
    var send = form.querySelector("#send-button");
    var stop = form.querySelector("#stop-button");
    var input = form.querySelector("textarea");
    if (send) send.disabled = sending || running;
    var attach = form.querySelector("#attach-button");
    if (attach) attach.disabled = sending;
    if (stop) stop.disabled = !running;
    if (input) input.readOnly = sending;
    form.classList.toggle("is-busy", sending || running);
    form.setAttribute("aria-busy", sending || running ? "true" : "false");
  }

  function autosize(input) {
    input.style.height = "auto";
    input.style.height = Math.min(input.scrollHeight + 2, window.innerHeight * 0.4) + "px";
  }

  function replaceFromResponse(selector, html) {
    var current = document.querySelector(selector);
    var next = parse(html).firstElementChild;
    if (!current || !next) return null;
    current.replaceWith(next);
    if (window.htmx) window.htmx.process(next);
    return next;
  }

  function showComposerError(text) {
    var form = composer();
    if (!form) return;
    var list = form.querySelector(".composer-errors");
    if (!list) {
      list = document.createElement("ul");
      list.className = "errorlist composer-errors";
      list.setAttribute("role", "alert");
      form.insertBefore(list, form.querySelector(".composer-box"));
    }
    list.textContent = "";
    var item = document.createElement("li");
    item.textContent = text;
    list.appendChild(item);
  }

  function submitComposer(form) {
    var input = form.querySelector("textarea");
    if (sending || streaming().length || !input || !input.value.trim()) return;
    sending = true;
    updateComposer();
    post(form.action, form, pending)
      .then(function (response) {
        return response.text().then(function (text) { return { response: response, text: text }; });
      })
      .then(function (result) {
        var retarget = result.response.headers.get("HX-Retarget");
        if (retarget) {
          replaceFromResponse(retarget, result.text);
          // The re-rendered composer has no chips: show the chosen files again (the errors may be about them).
          syncAttach();
        } else if (result.response.ok) {
          var errors = form.querySelector(".composer-errors");
          if (errors) errors.remove();
          input.value = "";
          autosize(input);
          pending = [];
          renderChips();
          insertArticles(result.text);
          refreshList();
        } else {
          showComposerError("Could not send (HTTP " + result.response.status + "). Your message is still here; try again.");
        }
      })
      .catch(function () {
        showComposerError("Could not reach the server. Your message is still here; try again.");
      })
      .then(function () {
        sending = false;
        deferredStarts.splice(0).forEach(insertArticles);
        updateComposer();
        var current = composer();
        var box = current && current.querySelector("textarea");
        if (box) box.focus();
        refreshPreview();
      });
  }

  // ---------------------------------------------------------------- attachments

  var pending = []; // the File objects chosen for the next message

  function formatSize(size) {
    if (size >= 1024 * 1024) return (size / (1024 * 1024)).toFixed(1) + " MB";
    return Math.max(1, Math.round(size / 1024)) + " KB";
  }

  function renderChips() {
    var list = document.getElementById("attachment-chips");
    if (!list) return;
    list.textContent = "";
    pending.forEach(function (file, index) {
      var chip = document.createElement("li");
      chip.className = "chip";
      var name = document.createElement("span");
      name.className = "chip-name";
      name.textContent = file.name;
      name.title = file.name;
      var size = document.createElement("span");
      size.className = "chip-size muted mono";
      size.textContent = formatSize(file.size);
      var remove = document.createElement("button");
      remove.type = "button";
      remove.className = "chip-remove";
      remove.setAttribute("aria-label", "Remove " + file.name);
      remove.dataset.removeAttachment = String(index);
      remove.textContent = "×";
      chip.appendChild(name);
      chip.appendChild(size);
      chip.appendChild(remove);
      list.appendChild(chip);
    });
    list.hidden = pending.length === 0;
  }

  function addFiles(files) {
    Array.prototype.forEach.call(files || [], function (file) { pending.push(file); });
    renderChips();
  }

  // The accepted types follow the selected model (the panel carries them); no button when it takes no files.
  function syncAttach() {
    var panel = document.getElementById("panel");
    var input = document.getElementById("composer-files");
    var button = document.getElementById("attach-button");
    if (panel && input && panel.hasAttribute("data-attach-accept")) input.accept = panel.dataset.attachAccept;
    if (button && input) button.hidden = !input.accept;
    renderChips();
  }

  // A change in the settings panel saves it, except a model or connection switch, which first re-renders the
  // panel (an htmx trigger filter would do this, but filters need eval, which the Content-Security-Policy forbids).
  document.addEventListener("change", function (event) {
    var form = event.target.closest && event.target.closest("#settings-form");
    if (form && !event.target.dataset.switch && window.htmx) window.htmx.trigger(form, "settings-change");
  });

  document.addEventListener("change", function (event) {
    if (event.target.id !== "composer-files") return;
    addFiles(event.target.files);
    event.target.value = "";
  });

  document.addEventListener("paste", function (event) {
    var button = document.getElementById("attach-button");
    var files = event.clipboardData && event.clipboardData.files;
    if (event.target.id === "composer-input" && button && !button.hidden && files && files.length) {
      event.preventDefault();
      addFiles(files);
    }
  });

  // A generation started in another tab: its question is not in this one yet, so fetch what is missing.
  function syncThread() {
    fetch(location.pathname, { credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : ""; })
      .then(function (html) {
        var page = parse(html);
        var articles = page.querySelectorAll("#thread article[data-message-id]");
        insertArticles(Array.prototype.map.call(articles, function (a) { return a.outerHTML; }).join(""));
      });
  }

  function stopAll() {
    streaming().forEach(function (article) {
      var sent = sendJSON({ type: "stop", message_id: Number(article.dataset.messageId) });
      if (!sent && article.dataset.stopUrl) post(article.dataset.stopUrl);
    });
  }

  function refreshList() {
    var search = document.querySelector("[data-search]");
    var list = document.getElementById("conversation-list");
    if (!search || !list || !window.htmx) return;
    window.htmx.ajax("GET", search.getAttribute("hx-get") + "?q=" + encodeURIComponent(search.value), {
      target: "#conversation-list", swap: "outerHTML",
    }).then(function () {
      // The first message names the conversation: show the new title in the toolbar too.
      var link = document.querySelector('#conversation-list a[href="/c/' + thread.dataset.conversation + '/"]');
      var title = document.querySelector(".chat-title");
      if (link) link.setAttribute("aria-current", "page");
      if (link && title) {
        title.textContent = link.querySelector(".conversation-title").textContent;
        document.title = title.textContent + " · Playground";
      }
    });
  }

  // ---------------------------------------------------------------- retry and countdowns

  function retry(form) {
    var article = form.closest("article");
    var button = form.querySelector("button");
    if (button) button.disabled = true;
    sending = true;
    post(form.action, form)
      .then(function (response) {
        return response.text().then(function (text) { return { response: response, text: text }; });
      })
      .then(function (result) {
        if (result.response.ok) {
          if (article) article.remove();
          insertArticles(result.text);
        } else {
          var note = form.querySelector(".countdown");
          if (note) note.textContent = result.text || "Retry failed (HTTP " + result.response.status + ").";
          if (button) button.disabled = false;
        }
      })
      .catch(function () {
        var note = form.querySelector(".countdown");
        if (note) note.textContent = "Could not reach the server.";
        if (button) button.disabled = false;
      })
      .then(function () {
        sending = false;
        deferredStarts.splice(0).forEach(insertArticles);
        updateComposer();
      });
  }

  function startCountdowns(root) {
    root.querySelectorAll("[data-retry-after]").forEach(function (button) {
      if (button.dataset.counting) return;
      var left = Math.ceil(Number(button.dataset.retryAfter) || 0);
      if (left <= 0) return;
      button.dataset.counting = "1";
      var note = button.parentNode.querySelector(".countdown");
      button.disabled = true;
      var tick = function () {
        if (left <= 0) {
          button.disabled = false;
          if (note) note.textContent = "You can retry now.";
          return;
        }
        if (note) note.textContent = "Retry possible in " + left + " s";
        left -= 1;
        setTimeout(tick, 1000);
      };
      tick();
    });
  }

  // ---------------------------------------------------------------- parameter panel

  function selectedTab() {
    var tab = document.querySelector('#panel [role=tab][aria-selected="true"]');
    return tab ? tab.id : null;
  }

  function refreshPreview() {
    var pre = document.getElementById("request-preview");
    var tab = document.getElementById("tab-request");
    if (!pre || !tab || tab.getAttribute("aria-selected") !== "true") return;
    var input = document.querySelector("#composer textarea");
    var url = pre.dataset.url + (input && input.value ? "?content=" + encodeURIComponent(input.value) : "");
    fetch(url, { credentials: "same-origin" })
      .then(function (response) { return response.text(); })
      // The body holds user text: it is shown as text, never parsed as HTML.
      .then(function (text) { pre.textContent = text; });
  }

  function togglePanel() {
    var panel = document.getElementById("chat-panel");
    if (window.matchMedia("(max-width: 1000px)").matches) {
      panel.classList.toggle("open");
      return;
    }
    var collapsed = workspace.classList.toggle("panel-collapsed");
    localStorage.setItem("chat-panel-collapsed", collapsed ? "1" : "");
    syncPanelToggle();
  }

  function syncPanelToggle() {
    var collapsed = workspace.classList.contains("panel-collapsed");
    document.querySelectorAll(".panel-toggle").forEach(function (button) {
      button.setAttribute("aria-expanded", collapsed ? "false" : "true");
    });
  }

  // Bounded numeric parameters get a slider beside their number box (the box is what the form posts).
  function addSliders() {
    document.querySelectorAll("#panel .param-number input[type=number][min][max]").forEach(function (box) {
      if (box.dataset.slider) return;
      box.dataset.slider = "1";
      // Integer fields have no step attribute; float fields have one (or "any"). Wide integer ranges (seed,
      // max_tokens, thinking_budget) are typed, not slid.
      var step = box.getAttribute("step");
      if (!step && Number(box.max) - Number(box.min) > 100) return;
      var range = document.createElement("input");
      range.type = "range";
      range.className = "param-range";
      range.min = box.min;
      range.max = box.max;
      range.step = !step ? "1" : step === "any" ? "0.01" : step;
      range.tabIndex = -1;
      range.setAttribute("aria-hidden", "true");
      var sync = function () {
        range.classList.toggle("unset", box.value === "");
        if (box.value !== "") range.value = box.value;
      };
      sync();
      range.addEventListener("input", function () { box.value = range.value; range.classList.remove("unset"); });
      box.addEventListener("input", sync);
      var help = box.parentNode.querySelector(".help");
      box.parentNode.insertBefore(range, help || null);
    });
  }

  var keepTab = null;
  var switched = false;
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail && event.detail.elt;
    if (elt && elt.dataset && elt.dataset.switch) switched = true;
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.target && event.detail.target.id === "panel") keepTab = selectedTab();
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    if (!event.detail.target || event.detail.target.id !== "panel") return;
    var panel = document.getElementById("panel");
    if (keepTab && panel && window.Playground) {
      var tab = document.getElementById(keepTab);
      if (tab && tab.getAttribute("aria-selected") !== "true") window.Playground.selectTab(tab);
    }
    keepTab = null;
    addSliders();
    syncAttach();
    // A model or connection switch re-renders the panel with that model's parameters; then save them.
    if (switched) {
      switched = false;
      var form = document.getElementById("settings-form");
      if (form && window.htmx) window.htmx.trigger(form, "settings-change");
    }
    refreshPreview();
  });
  document.addEventListener("tab:selected", function (event) {
    if (event.target.id === "tab-request") refreshPreview();
  });

  // ---------------------------------------------------------------- events

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.id === "composer" && form.hasAttribute("data-send")) {
      event.preventDefault();
      submitComposer(form);
    } else if (form.hasAttribute("data-retry")) {
      event.preventDefault();
      retry(form);
    }
    // data-confirm forms are handled by app.js on every page.
  });

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (target.id === "composer-input" && event.key === "Enter" && !event.shiftKey && !event.isComposing &&
        !event.altKey && !event.ctrlKey && !event.metaKey) {
      event.preventDefault();
      var form = composer();
      if (form && form.hasAttribute("data-send")) submitComposer(form);
      else if (form && target.value.trim()) form.requestSubmit();
    } else if (event.key === "Escape" && streaming().length) {
      event.preventDefault();
      stopAll();
    }
  });

  var previewTimer = null;
  document.addEventListener("input", function (event) {
    if (event.target.id !== "composer-input") return;
    autosize(event.target);
    clearTimeout(previewTimer);
    previewTimer = setTimeout(refreshPreview, 400);
  });

  // Capture phase: give code-block copy buttons their text before app.js copies it.
  document.addEventListener("click", function (event) {
    var button = event.target.closest(".copy-button[data-copy-code]");
    if (button) {
      var code = button.closest(".code-block").querySelector("pre code");
      button.dataset.copy = code ? code.textContent : "";
    }
  }, true);

  document.addEventListener("click", function (event) {
    var target = event.target.closest("[data-stop], .image-placeholder, [data-toggle-panel], [data-attach], [data-remove-attachment]");
    if (!target) return;
    if (target.hasAttribute("data-attach")) {
      var files = document.getElementById("composer-files");
      if (files) files.click();
    } else if (target.hasAttribute("data-remove-attachment")) {
      pending.splice(Number(target.dataset.removeAttachment), 1);
      renderChips();
      var box = document.getElementById("composer-input");
      if (box) box.focus();
    } else if (target.hasAttribute("data-stop")) {
      stopAll();
    } else if (target.classList.contains("image-placeholder")) {
      var src = target.dataset.src || "";
      if (!/^https?:\/\//i.test(src)) return;
      var image = document.createElement("img");
      image.alt = target.firstChild ? target.firstChild.textContent.replace(/^Load image:?\s*/, "").trim() : "";
      image.src = src;
      image.referrerPolicy = "no-referrer";
      target.replaceWith(image);
    } else {
      togglePanel();
    }
  });

  // ---------------------------------------------------------------- start

  if (localStorage.getItem("chat-panel-collapsed") && workspace) workspace.classList.add("panel-collapsed");
  if (workspace) syncPanelToggle();
  startCountdowns(thread);
  thread.querySelectorAll('article[data-status="streaming"]').forEach(startWaiting);
  addSliders();
  syncAttach();
  updateComposer();
  scrollToEnd();
  var input = document.getElementById("composer-input");
  if (input) {
    autosize(input);
    if (!("ontouchstart" in window)) input.focus();
  }
  connect();

  window.ChatClient = {
    stats: stats,
    stop: stopAll,
    // Drops the websocket as a network failure would (it reconnects and resubscribes); for tests and demos.
    drop: function () { if (socket) socket.close(); },
  };
})();
