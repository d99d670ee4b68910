// Branch and compare forms (edit and resend, regenerate, ‹ › switch, insert, delete, compare, continue with this
// one): htmx posts that swap in the re-rendered thread; stream.js adopts the new articles. This file only says
// why a post was refused, and empties the composer once a comparison took its text.
(function () {
  "use strict";

  function branchForm(event) {
    var elt = event.detail && event.detail.elt;
    return elt && elt.closest ? elt.closest("form[data-branch-op]") : null;
  }

  document.addEventListener("htmx:responseError", function (event) {
    if (!branchForm(event)) return;
    var xhr = event.detail.xhr;
    var text = xhr.responseText || "The request failed (HTTP " + xhr.status + ").";
    document.dispatchEvent(new CustomEvent("chat:notice", { detail: { text: text } }));
  });

  function compared() {
    var input = document.getElementById("composer-input");
    if (input) input.value = "";
    var setup = document.getElementById("compare-setup");
    if (setup) setup.open = false;
    document.dispatchEvent(new CustomEvent("chat:sent"));  // the composer's attachments went with it
  }

  document.addEventListener("htmx:afterRequest", function (event) {
    var form = branchForm(event);
    if (form && event.detail.successful && form.id === "compare-form") compared();
  });
  document.addEventListener("chat:branch-sent", function (event) {
    if (event.target.id === "compare-form") compared();
  });
})();

// Another tab changed the thread's shape (switched a branch, inserted, deleted, compared): fetch the selected
// path again. Posts from this tab carry its id, so it skips the news of its own changes.
(function () {
  "use strict";

  var tab = Math.random().toString(36).slice(2, 12);
  var list = document.getElementById("message-list");
  if (!list) return;

  document.addEventListener("htmx:configRequest", function (event) {
    var elt = event.detail.elt;
    if (elt && elt.closest && elt.closest("form[data-branch-op]")) event.detail.headers["X-Chat-Tab"] = tab;
  });

  // A form marked data-socket-action (edit, regenerate, switch, delete, insert, compare, pick, tool results) goes
  // over the chat's websocket when it is open: its fields as a frame (no CSRF token: the socket is authenticated
  // and origin-checked); stream.js swaps in the `sent` reply as htmx would the POST's answer. Else the htmx POST
  // (and without JavaScript, the plain POST).
  function frameOf(form) {
    var frame = { action: form.dataset.socketAction, tab: tab };
    if (form.dataset.messageId) frame.message_id = form.dataset.messageId;
    var data = new FormData(form);
    var include = form.getAttribute("hx-include");
    if (include) {
      document.querySelectorAll(include).forEach(function (field) {
        if (field.name) data.append(field.name, field.value);
      });
    }
    data.forEach(function (value, key) {
      if (typeof value !== "string" || key === "csrfmiddlewaretoken") return;
      frame[key] = key in frame ? [].concat(frame[key], value) : value;
    });
    return frame;
  }

  function notice(text) {
    document.dispatchEvent(new CustomEvent("chat:notice", { detail: { text: text } }));
  }

  function answered(form, reply) {
    form.classList.remove("is-sending");
    form.querySelectorAll("button[type=submit]").forEach(function (button) { button.disabled = false; });
    if (reply.type === "sent") {
      form.dispatchEvent(new CustomEvent("chat:branch-sent", { bubbles: true, detail: reply }));
    } else if (reply.type === "invalid") notice((reply.errors || []).join(" "));
    else if (reply.type === "lost") notice("The connection dropped while sending: check the thread before trying again.");
    else notice(reply.error || "The request failed; try again.");
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    var form = event.target;
    var client = window.ChatClient;
    if (!form.matches || !form.matches("form[data-socket-action]") || !client || !client.request) return;
    // Files go by the POST only: a comparison with the composer's attachments is not sent as a socket frame.
    var files = document.getElementById("composer-files");
    if (form.id === "compare-form" && files && files.files && files.files.length) return;
    // Taken before the buttons are disabled (which blurs them): the re-render gives the focus back (app.js).
    var place = window.Playground ? window.Playground.focusPlace() : null;
    var done = function (reply) {
      answered(form, reply);
      if (place) window.Playground.restoreFocus(place, list);
    };
    if (!client.request(frameOf(form), done)) return;
    event.preventDefault();
    form.classList.add("is-sending");
    form.querySelectorAll("button[type=submit]").forEach(function (button) { button.disabled = true; });
  });

  var fetching = null;
  document.addEventListener("chat:thread", function (event) {
    if (event.detail.origin === tab || fetching) return;
    fetching = fetch(location.pathname, { credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : ""; })
      .then(function (html) {
        var template = document.createElement("template");
        template.innerHTML = html;
        var fresh = template.content.getElementById("message-list");
        if (fresh) {
          list.innerHTML = fresh.innerHTML;
          if (window.ChatClient && window.ChatClient.adopt) window.ChatClient.adopt();
        }
      })
      .finally(function () { fetching = null; });
  });
})();

// Edit and insert: the form is cloned from its template into the message's actions when asked for, and goes
// again on Cancel (or a second click).
(function () {
  "use strict";

  function close(button) {
    var form = button.parentNode.querySelector(".action-form");
    if (form) form.remove();
    button.setAttribute("aria-expanded", "false");
  }

  document.addEventListener("click", function (event) {
    var cancel = event.target.closest("[data-branch-cancel]");
    if (cancel) {
      var actions = cancel.closest(".message-actions");
      var opener = actions && actions.querySelector('[data-branch-form][aria-expanded="true"]');
      if (opener) close(opener);
      return;
    }
    var button = event.target.closest("[data-branch-form]");
    if (!button) return;
    var open = button.getAttribute("aria-expanded") === "true";
    button.parentNode.querySelectorAll('[data-branch-form][aria-expanded="true"]').forEach(close);
    if (open) return;
    var template = document.getElementById("branch-form-" + button.dataset.branchForm);
    if (!template) return;
    var form = template.content.firstElementChild.cloneNode(true);
    form.setAttribute("action", button.dataset.url);
    form.setAttribute("hx-post", button.dataset.url);
    if (button.dataset.branchForm === "edit") form.dataset.messageId = button.closest("article").dataset.messageId;
    var after = form.querySelector('input[name="after"]');
    if (after) after.value = button.dataset.after || "";
    var text = form.querySelector("textarea");
    if (button.dataset.branchForm === "edit") {
      var body = button.closest("article").querySelector(".message-body");
      text.value = body ? body.textContent : "";
    }
    button.parentNode.appendChild(form);
    button.setAttribute("aria-expanded", "true");
    if (window.htmx) window.htmx.process(form);
    text.focus();
  });
})();
