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
