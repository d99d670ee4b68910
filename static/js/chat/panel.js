// The parameter panel: collapse (a drawer on narrow screens), sliders beside bounded numbers, saving as the user
// changes it, keeping the selected tab across re-renders, and the live preview of the next request body.
(function () {
  "use strict";

  var workspace = document.getElementById("chat-workspace");
  if (!workspace) return;

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
      // Unset, the slider sits at the default the placeholder shows (else at its minimum), never where the
      // browser puts a range without a value (its middle, or its end once min and max are set in turn).
      var sync = function () {
        range.classList.toggle("unset", box.value === "");
        var shown = box.value !== "" ? box.value : box.placeholder;
        range.value = shown !== "" && isFinite(Number(shown)) ? shown : box.min;
      };
      sync();
      range.addEventListener("input", function () { box.value = range.value; range.classList.remove("unset"); });
      box.addEventListener("input", sync);
      var help = box.parentNode.querySelector(".help");
      box.parentNode.insertBefore(range, help || null);
    });
  }

  // A change in the settings panel saves it, except a model or connection switch, which first re-renders the
  // panel (an htmx trigger filter would do this, but filters need eval, which the Content-Security-Policy forbids).
  document.addEventListener("change", function (event) {
    var form = event.target.closest && event.target.closest("#settings-form");
    if (form && !event.target.dataset.switch && window.htmx) window.htmx.trigger(form, "settings-change");
  });

  // A change is saved 150 ms later (a slider dragged or a number typed saves once). A send does not wait for that
  // delay: it asks for the save at once and goes when the answer is in, so what the panel shows when Send is
  // pressed is what goes upstream. `asked` counts the changes; `answered` is the latest change a save answered.
  var asked = 0;
  var answered = 0;
  var issued = 0;
  var saveTimer = null;
  var waiting = [];

  function save() {
    clearTimeout(saveTimer);
    saveTimer = null;
    var form = document.getElementById("settings-form");
    if (form && window.htmx) window.htmx.trigger(form, "settings-save");
  }

  document.addEventListener("settings-change", function (event) {
    if (event.target.id !== "settings-form") return;
    asked += 1;
    clearTimeout(saveTimer);
    saveTimer = setTimeout(save, 150);
  });

  // Calls `then(refused)` once the panel's latest change is saved (`refused`: the panel holds an error, so the
  // conversation still has its previous settings); returns true when nothing is pending (and calls nothing).
  function whenSaved(then) {
    if (answered >= asked) return true;
    waiting.push(then);
    if (issued < asked) save();
    return false;
  }

  function answeredUpTo(count) {
    answered = Math.max(answered, count);
    if (answered < asked) return;
    var panel = document.getElementById("panel");
    var refused = !!(panel && panel.querySelector("#settings-form .errorlist li"));
    var calls = waiting;
    waiting = [];
    calls.forEach(function (then) { then(refused); });
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail && event.detail.elt;
    if (!elt || elt.id !== "settings-form") return;
    event.detail.xhr.settingsAsked = asked;
    issued = Math.max(issued, asked);
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    var count = event.detail.xhr && event.detail.xhr.settingsAsked;
    if (count === undefined) return;
    // A save that failed (no answer, or an error status) is asked again by the next send.
    if (event.detail.successful) answeredUpTo(count);
    else {
      issued = answered;
      var calls = waiting;
      waiting = [];
      calls.forEach(function (then) { then(true); });
    }
  });

  // A panel answer older than the user's latest edit is not swapped in: it would put back what the panel held
  // when it was sent (a function just added with the builder, a number being typed), and drop the save that edit
  // has pending. The save of the latest edit brings the panel back.
  var edits = 0;
  ["input", "settings-change"].forEach(function (name) {
    document.addEventListener(name, function (event) {
      if (event.target.closest && event.target.closest("#panel")) edits += 1;
    });
  });

  var keepTab = null;
  var switched = false;
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail && event.detail.elt;
    if (elt && elt.dataset && elt.dataset.switch) switched = true;
    if (event.detail.target && event.detail.target.id === "panel") event.detail.xhr.panelEdits = edits;
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (!event.detail.target || event.detail.target.id !== "panel") return;
    var sent = event.detail.xhr && event.detail.xhr.panelEdits;
    if (sent !== undefined && sent < edits && event.detail.xhr.status < 400) {
      event.detail.shouldSwap = false;
      return;
    }
    keepTab = selectedTab();
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    addSliders(); // the start page's settings come out of band, with the picker
    if (!event.detail.target || event.detail.target.id !== "panel") return;
    var panel = document.getElementById("panel");
    if (keepTab && panel && window.Playground) {
      var tab = document.getElementById(keepTab);
      if (tab && tab.getAttribute("aria-selected") !== "true") window.Playground.selectTab(tab);
    }
    keepTab = null;
    addSliders();
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

  // The preview follows the draft message as it is typed, and the thread once a message is sent.
  var previewTimer = null;
  document.addEventListener("input", function (event) {
    if (event.target.id !== "composer-input") return;
    clearTimeout(previewTimer);
    previewTimer = setTimeout(refreshPreview, 400);
  });
  document.addEventListener("chat:sent", refreshPreview);

  document.addEventListener("click", function (event) {
    if (event.target.closest("[data-toggle-panel]")) togglePanel();
  });

  window.Playground = window.Playground || {};
  window.Playground.whenSettingsSaved = whenSaved;

  if (localStorage.getItem("chat-panel-collapsed")) workspace.classList.add("panel-collapsed");
  syncPanelToggle();
  addSliders();
})();
