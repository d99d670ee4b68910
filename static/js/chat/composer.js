// The composer is an htmx form (hx-post; a plain POST that redirects without JavaScript). This file adds what a
// form cannot: a send over the chat's websocket when it is open (the upstream call starts sooner), Enter sends and
// Shift+Enter is a newline, the busy state while a post is in flight or an answer
// streams, Stop and Esc, the notices for a send that failed, and a clean composer once the message is sent.
(function () {
  "use strict";

  function composer() { return document.getElementById("composer"); }

  var awaitingSettings = false; // a send waits for the panel's pending save (settingsPending)

  function client() { return window.ChatClient; }

  function running() { return client() ? client().streaming().length > 0 : false; }

  function posting() { return client() ? client().posting() : false; }

  function update() {
    var form = composer();
    if (!form) return;
    var sending = posting() || awaitingSettings;
    var busy = sending || running();
    var send = form.querySelector("#send-button");
    var stop = form.querySelector("#stop-button");
    var attach = form.querySelector("#attach-button");
    var input = form.querySelector("textarea");
    if (send) send.disabled = busy;
    if (attach) attach.disabled = sending;
    if (stop) stop.disabled = !running();
    if (input) input.readOnly = sending;
    form.classList.toggle("is-busy", busy);
    form.setAttribute("aria-busy", busy ? "true" : "false");
  }

  function autosize(input) {
    input.style.height = "auto";
    input.style.height = Math.min(input.scrollHeight + 2, window.innerHeight * 0.4) + "px";
  }

  function showError(text) {
    showErrors([text]);
  }

  function showErrors(texts) {
    var form = composer();
    if (!form) return;
    // An alert around a list (a list with the alert role would lose its items' list).
    var box = form.querySelector(".composer-errors");
    if (!box) {
      box = document.createElement("div");
      box.className = "composer-errors";
      box.setAttribute("role", "alert");
      form.insertBefore(box, form.querySelector(".composer-box"));
    }
    var list = box.querySelector("ul");
    if (!list) {
      list = document.createElement("ul");
      list.className = "errorlist";
      box.appendChild(list);
    }
    list.textContent = "";
    texts.forEach(function (text) {
      var item = document.createElement("li");
      item.textContent = text;
      list.appendChild(item);
    });
  }

  function sent(form) {
    clear(form);
    form.dispatchEvent(new CustomEvent("chat:sent", { bubbles: true }));
  }

  function clear(form) {
    var input = form.querySelector("textarea");
    var errors = form.querySelector(".composer-errors");
    if (errors) errors.remove();
    if (input && input.value) {
      input.value = "";
      autosize(input);
    }
  }

  // The form's fields as a send frame: text fields only (files go by the form POST), no CSRF token (the socket
  // is authenticated and origin-checked).
  function frameOf(form) {
    var frame = { action: "send" };
    var data = new FormData(form);
    var files = false;
    data.forEach(function (value, key) {
      if (typeof value !== "string") {
        if (value.size || value.name) files = true;
        return;
      }
      if (key === "csrfmiddlewaretoken") return;
      if (key in frame) frame[key] = [].concat(frame[key], value);
      else frame[key] = value;
    });
    return files ? null : frame;
  }

  // As the POST's HX-Trigger does, the conversation list (and the title) follow the new turn, but once the answer's
  // first words are on screen (a quarter of a second later) or it ended, not with the reply: the list's request
  // would share the server with the first deltas, and held them back by 25-30 ms (bench/ttft_browser.py). With the
  // socket down (its process restarting) the list waits for it to be back.
  var LIST_AFTER = 250;

  function listAfter(reply) {
    var timer = null;
    function shown() {
      var body = document.querySelector('article[data-message-id="' + reply.message_id + '"] .message-body');
      if (timer === null && body && body.textContent.trim()) timer = setTimeout(refresh, LIST_AFTER);
    }
    function ended(event) {
      if (event.target.dataset && event.target.dataset.messageId === String(reply.message_id)) refresh();
    }
    function back(event) {
      if (event.detail.state === "open") refresh();
    }
    function refresh() {
      clearTimeout(timer);
      document.removeEventListener("chat:state", shown);
      document.removeEventListener("chat:finished", ended);
      if (client() && !client().connected()) {
        document.addEventListener("chat:connection", back);
        return;
      }
      document.removeEventListener("chat:connection", back);
      if (window.htmx) window.htmx.trigger(document.body, "conversation-changed", { id: reply.conversation });
    }
    document.addEventListener("chat:state", shown);
    document.addEventListener("chat:finished", ended);
  }

  // A send of an open conversation goes over its websocket when that is open; the form POST stays the way for
  // files, a closed socket, and pages without JavaScript. The box is cleared as the message leaves (the thread shows
  // it at once, stream.js): a reply other than `sent` puts it back.
  function sendOverSocket(form) {
    if (!client() || !client().request || form.getAttribute("hx-target") !== "#message-list") return false;
    var frame = frameOf(form);
    if (!frame) return false;
    var input = form.querySelector("textarea");
    var asked = client().request(frame, function (reply) {
      update();
      if (reply.type === "sent") {
        sent(form);
        listAfter(reply);
        return;
      }
      if (input && !input.value) {
        input.value = frame.content;
        autosize(input);
      }
      if (reply.type === "invalid") showErrors(reply.errors || []);
      // Its process is restarting: socket.js left that socket, so this send goes by the form POST instead.
      else if (reply.type === "failed" && reply.problem === "draining") { form.requestSubmit(); return; }
      else if (reply.type === "lost") showError("The connection dropped while sending: check the thread before sending again.");
      else showError(reply.error || "Could not send. Your message is still here; try again.");
      if (input) input.focus();
    });
    if (asked) {
      clear(form);
      if (input) input.focus();
    }
    return asked;
  }

  function isComposer(event) {
    return event.target && event.target.id === "composer";
  }

  // A settings change not yet saved goes first (panel.js saves 150 ms after a change): the message goes once the
  // save is answered, so it is sent with what the panel shows. A refused setting keeps the message here.

  function settingsPending(form) {
    var playground = window.Playground;
    if (!playground || !playground.whenSettingsSaved || form.getAttribute("hx-target") !== "#message-list") return false;
    return !playground.whenSettingsSaved(function (refused) {
      awaitingSettings = false;
      update();
      if (refused) showError("A setting in the panel has an error: fix it, then send again.");
      else if (composer()) composer().requestSubmit();
    });
  }

  // One message at a time, and never an empty one (a blank box is refused here rather than by the server).
  document.addEventListener("htmx:beforeRequest", function (event) {
    if (!isComposer(event)) return;
    var input = event.target.querySelector("textarea");
    if (awaitingSettings || posting() || running() || !input || !input.value.trim()) event.preventDefault();
    else if (settingsPending(event.target)) {
      event.preventDefault();
      awaitingSettings = true;
      update();
    } else if (sendOverSocket(event.target)) {
      event.preventDefault();
      update();
    }
  });

  document.addEventListener("htmx:beforeSend", update);
  document.addEventListener("chat:state", update);
  // A refused send swaps in a new composer; while htmx settles it, it wears the old one's htmx-request class, so
  // a state update then would leave the new box read-only: update once it settled.
  document.addEventListener("htmx:afterSettle", update);

  document.addEventListener("htmx:afterRequest", function (event) {
    update();
    if (!isComposer(event)) return;
    var form = composer();
    var input = form && form.querySelector("textarea");
    // The articles went into the thread: the message is sent. (Refused input comes back as a new composer, or as
    // words the composer shows: X-Refused-Input.)
    var refused = event.detail.xhr && event.detail.xhr.getResponseHeader("X-Refused-Input");
    if (event.detail.successful && !refused && event.detail.target && event.detail.target.id === "message-list" && input) {
      sent(form);
    }
    if (input) input.focus();
  });

  // Input refused before any view read it (app.js): its words, once, in the composer's own box, which stays in view.
  document.addEventListener("playground:refused", function (event) {
    if (!isComposer(event)) return;
    event.preventDefault();
    showError(event.detail.text);
  });
  document.addEventListener("htmx:responseError", function (event) {
    if (isComposer(event)) {
      showError("Could not send (HTTP " + event.detail.xhr.status + "). Your message is still here; try again.");
    }
  });
  document.addEventListener("htmx:sendError", function (event) {
    if (isComposer(event)) showError("Could not reach the server. Your message is still here; try again.");
  });
  document.addEventListener("chat:notice", function (event) { showError(event.detail.text); });

  // The first message names the conversation: the list (refreshed by htmx on conversation-changed) has the new
  // title; the toolbar and the window show it too.
  document.addEventListener("htmx:afterSwap", function (event) {
    var thread = document.getElementById("thread");
    if (!event.target || event.target.id !== "conversation-list" || !thread || !thread.dataset.conversation) return;
    var link = event.target.querySelector('a[href="/c/' + thread.dataset.conversation + '/"]');
    var title = document.querySelector(".chat-title");
    if (link) link.setAttribute("aria-current", "page");
    if (link && title) {
      title.textContent = link.querySelector(".conversation-title").textContent;
      title.title = title.textContent; // cut to one line: the whole title on hover
      document.title = title.textContent + " · Playground";
    }
  });

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (target.id === "composer-input" && event.key === "Enter" && !event.shiftKey && !event.isComposing &&
        !event.altKey && !event.ctrlKey && !event.metaKey) {
      event.preventDefault();
      var form = composer();
      if (form && !posting() && !running() && target.value.trim()) form.requestSubmit();
    } else if (event.key === "Escape" && running()) {
      event.preventDefault();
      stop();
    }
  });

  document.addEventListener("input", function (event) {
    if (event.target.id === "composer-input") {
      autosize(event.target);
    }
  });
  // Over the websocket when it is up (the generator's process hears it at once), else through the stop view.
  function stop() {
    client().streaming().forEach(function (article) {
      var sent = client().send({ type: "stop", message_id: Number(article.dataset.messageId) });
      if (!sent && article.dataset.stopUrl && window.htmx) {
        window.htmx.ajax("POST", article.dataset.stopUrl, { source: article, swap: "none" });
      }
    });
  }

  document.addEventListener("click", function (event) {
    if (event.target.closest("[data-stop]") && client()) stop();
  });

  update();
  var input = document.getElementById("composer-input");
  if (input) {
    autosize(input);
    if (!("ontouchstart" in window)) input.focus();
  }
})();
