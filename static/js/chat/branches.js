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

  document.addEventListener("htmx:afterRequest", function (event) {
    var form = branchForm(event);
    if (!form || !event.detail.successful || form.id !== "compare-form") return;
    var input = document.getElementById("composer-input");
    if (input) input.value = "";
    var setup = document.getElementById("compare-setup");
    if (setup) setup.open = false;
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
