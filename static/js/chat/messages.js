// Behaviours inside the thread's messages: the wait for the first token, retry (an htmx form) with its countdown
// and its errors, remote images that load on click, and the text of code-block copy buttons.
(function () {
  "use strict";

  var thread = document.getElementById("thread");
  if (!thread) return;

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

  // A rate-limited answer says when a retry may work: its button waits until then.
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

  document.addEventListener("chat:message", function (event) {
    startCountdowns(event.target);
    startWaiting(event.target);
  });

  // A refused retry keeps the answer and says why beside the button (htmx swaps only 2xx responses).
  function retryFailed(event, text) {
    var form = event.target;
    if (!form.classList || !form.classList.contains("retry-form")) return;
    var note = form.querySelector(".countdown");
    if (note) note.textContent = text;
  }
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    retryFailed(event, xhr.responseText || "Retry failed (HTTP " + xhr.status + ").");
  });
  document.addEventListener("htmx:sendError", function (event) {
    retryFailed(event, "Could not reach the server.");
  });

  // Capture phase: give code-block copy buttons their text before app.js copies it.
  document.addEventListener("click", function (event) {
    var button = event.target.closest(".copy-button[data-copy-code]");
    if (button) {
      var code = button.closest(".code-block").querySelector("pre code");
      button.dataset.copy = code ? code.textContent : "";
    }
  }, true);

  // Remote images in answers are placeholders until clicked, so an answer cannot make the browser fetch them.
  document.addEventListener("click", function (event) {
    var target = event.target.closest(".image-placeholder");
    if (!target) return;
    var src = target.dataset.src || "";
    if (!/^https?:\/\//i.test(src)) return;
    var image = document.createElement("img");
    image.alt = target.firstChild ? target.firstChild.textContent.replace(/^Load image:?\s*/, "").trim() : "";
    image.src = src;
    image.referrerPolicy = "no-referrer";
    target.replaceWith(image);
  });
})();
