// The connection banner: says so above the thread while the chat's websocket is down, counts down to the next
// attempt (socket.js reconnects with backoff and, once back, stream.js asks for every answer shown as streaming),
// offers to try at once, and says "Reconnected" for a moment when it is back. The banner is looked up each time: the
// start page gets it only when its first message makes the conversation (start.js).
(function () {
  "use strict";

  var countdown = null;
  var hideTimer = null;

  function parts() {
    var banner = document.getElementById("connection-banner");
    if (!banner) return null;
    return { banner: banner, text: banner.querySelector(".connection-text"), retry: banner.querySelector(".connection-retry") };
  }

  function stopCountdown() {
    clearInterval(countdown);
    countdown = null;
  }

  function showLost(retryIn, offline) {
    var p = parts();
    if (!p) return;
    clearTimeout(hideTimer);
    stopCountdown();
    p.banner.classList.remove("is-back");
    // Screen readers hear it from the chat's live region (announce.js), not from the banner.
    p.text.textContent = offline ? "You are offline: reconnecting when the network is back…" : "Connection lost, reconnecting…";
    p.banner.hidden = false;
    var at = Date.now() + (retryIn || 0);
    var tick = function () {
      var left = Math.ceil((at - Date.now()) / 1000);
      p.retry.textContent = left > 0 ? "Next try in " + left + " s" : "Trying…";
    };
    tick();
    countdown = setInterval(tick, 500);
  }

  function showBack() {
    var p = parts();
    if (!p) return;
    stopCountdown();
    p.banner.classList.add("is-back");
    p.text.textContent = "Reconnected.";
    p.retry.textContent = "";
    hideTimer = setTimeout(function () { p.banner.hidden = true; }, 2500);
  }

  document.addEventListener("chat:connection", function (event) {
    if (event.detail.state === "lost") showLost(event.detail.retryIn, event.detail.offline);
    else if (event.detail.state === "open") showBack();
  });

  document.addEventListener("click", function (event) {
    if (!event.target.closest("[data-reconnect-now]")) return;
    if (window.ChatClient) window.ChatClient.reconnect();
    var p = parts();
    if (p) p.retry.textContent = "Trying…";
  });
})();
