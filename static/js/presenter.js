// Presenter view shortcuts (only on a page opened with ?present=1): send, stop, toggle the panel, font size, exit.
(function () {
  "use strict";

  if (!document.body.classList.contains("presenter")) return;
  var root = document.body;
  var scale = Number(localStorage.getItem("presenter-scale")) || 1;

  function setScale(value) {
    scale = Math.min(2.5, Math.max(0.6, Math.round(value * 10) / 10));
    root.style.setProperty("--present-scale", String(scale));
    root.dataset.presentScale = String(scale);
    localStorage.setItem("presenter-scale", String(scale));
  }

  function click(selector) {
    var button = document.querySelector(selector);
    if (button && !button.disabled) button.click();
  }

  setScale(scale);
  document.addEventListener("keydown", function (event) {
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
      var form = document.getElementById("composer") || document.querySelector("main form[method=post]");
      if (form) { event.preventDefault(); form.requestSubmit(); }
      return;
    }
    if (!event.altKey || event.ctrlKey || event.metaKey) return;
    var handled = true;
    if (event.code === "KeyP") {
      var workspace = document.getElementById("chat-workspace");
      if (workspace) workspace.classList.toggle("presenter-panel");
    } else if (event.code === "Equal" || event.code === "NumpadAdd") setScale(scale + 0.1);
    else if (event.code === "Minus" || event.code === "NumpadSubtract") setScale(scale - 0.1);
    else if (event.code === "Digit0") setScale(1);
    else if (event.code === "KeyS") click("#stop-button");
    else if (event.code === "KeyX") click("[data-present-link]");
    else handled = false;
    if (handled) event.preventDefault();
  });
})();
