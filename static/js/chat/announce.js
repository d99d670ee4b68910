// The chat's one polite live region (#chat-announcer): says that an answer finished, failed or stopped, and that
// the connection was lost or is back. Never a delta: a screen reader hears the answer once it is whole.
(function () {
  "use strict";

  var region = document.getElementById("chat-announcer");
  if (!region) return;
  var clearTimer = null;

  function say(text) {
    clearTimeout(clearTimer);
    // The same words twice in a row are announced again only if the region changes in between.
    region.textContent = "";
    setTimeout(function () {
      region.textContent = text;
      clearTimer = setTimeout(function () { region.textContent = ""; }, 8000);
    }, 50);
  }

  function words(article) {
    var status = article.dataset.status;
    if (status === "complete") {
      var body = article.querySelector(".message-body");
      var length = body ? body.textContent.trim().split(/\s+/).filter(Boolean).length : 0;
      return length ? "Answer finished, " + length + (length === 1 ? " word." : " words.") : "Answer finished.";
    }
    if (status === "stopped") return "Answer stopped.";
    if (status === "interrupted") return "Answer interrupted.";
    if (status === "error") {
      var notice = article.querySelector(".message-notice");
      return "Answer failed. " + (notice ? notice.textContent.replace(/\s+/g, " ").replace(/\bRetry\b\s*$/, "").trim() : "");
    }
    return "";
  }

  document.addEventListener("chat:finished", function (event) {
    var text = words(event.target);
    if (text) say(text);
  });

  document.addEventListener("chat:connection", function (event) {
    if (event.detail.state === "lost") say(event.detail.offline ? "You are offline. The chat reconnects when the network is back." : "Connection lost, reconnecting.");
    else if (event.detail.state === "open") say("Reconnected.");
  });

  window.ChatAnnounce = { say: say };
})();
