// The connection banner: says so above the thread while the chat's websocket is down, counts down to the next
// attempt (stream.js reconnects with backoff and, once back, asks for every answer shown as streaming), offers
// to try at once, and says "Reconnected" for a moment when it is back.
(function () {
  "use strict";

  var banner = document.getElementById("connection-banner");
  if (!banner) return;
  var text = banner.querySelector(".connection-text");
  var retry = banner.querySelector(".connection-retry");
  var countdown = null;
  var hideTimer = null;

  function stopCountdown() {
    clearInterval(countdown);
    countdown = null;
  }

  function showLost(retryIn, offline) {
    clearTimeout(hideTimer);
    stopCountdown();
    banner.classList.remove("is-back");
    // Screen readers hear it from the chat's live region (announce.js), not from the banner.
    text.textContent = offline ? "You are offline: reconnecting when the network is back…" : "Connection lost, reconnecting…";
    banner.hidden = false;
    var at = Date.now() + (retryIn || 0);
    var tick = function () {
      var left = Math.ceil((at - Date.now()) / 1000);
      retry.textContent = left > 0 ? "Next try in " + left + " s" : "Trying…";
    };
    tick();
    countdown = setInterval(tick, 500);
  }

  function showBack() {
    stopCountdown();
    banner.classList.add("is-back");
    text.textContent = "Reconnected.";
    retry.textContent = "";
    hideTimer = setTimeout(function () { banner.hidden = true; }, 2500);
  }

  document.addEventListener("chat:connection", function (event) {
    if (event.detail.state === "lost") showLost(event.detail.retryIn, event.detail.offline);
    else if (event.detail.state === "open") showBack();
  });

  banner.querySelector("[data-reconnect-now]").addEventListener("click", function () {
    if (window.ChatClient) window.ChatClient.reconnect();
    retry.textContent = "Trying…";
  });
})();
