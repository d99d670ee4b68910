// n > 1: an answer's choices as tabs (or side by side), each streaming as its deltas arrive.
//
// The first choice is the message body that stream.js renders; the others arrive in deltas as `choices`
// ({index: text appended}) and in snapshots as a list. Their text is kept here and rendered as markdown by
// markdown.js (sanitized like the server's render), only for the panels on screen, and at most every 200 ms
// for long texts. The final render from the server replaces the whole article; the tab chosen is kept.
(function () {
  "use strict";

  var thread = document.getElementById("thread");
  if (!thread) return;

  var texts = {}; // message id -> [text of choice 2, text of choice 3, …]
  var shown = {}; // message id -> {number: length rendered}
  var selected = {}; // message id -> number of the tab shown
  var sideBySide = {}; // message id -> true when all choices show at once
  var timers = {};

  function idOf(article) { return article.dataset.messageId; }

  function panelsOf(article) {
    return Array.from(article.querySelectorAll(".choice-panels > [data-choice]"));
  }

  function visible(panel) { return !panel.hidden; }

  function render(article, panel) {
    var id = idOf(article);
    var number = Number(panel.dataset.choice);
    if (number < 2 || !texts[id]) return;
    var text = texts[id][number - 2] || "";
    var done = shown[id] || (shown[id] = {});
    if (done[number] === text.length) return;
    var target = panel.querySelector(".choice-html");
    if (!target) return;
    if (window.ChatMarkdown) {
      target.innerHTML = window.ChatMarkdown.render(text);
      window.ChatMarkdown.typeset(target);
    } else {
      target.textContent = text;
    }
    done[number] = text.length;
  }

  function renderVisible(article) {
    var id = idOf(article);
    var long = (texts[id] || []).some(function (text) { return text && text.length > 8000; });
    if (long && timers[id]) return;
    var run = function () {
      timers[id] = null;
      var current = document.getElementById("message-" + id);
      if (current) panelsOf(current).filter(visible).forEach(function (panel) { render(current, panel); });
    };
    if (long) timers[id] = setTimeout(run, 200);
    else run();
  }

  function select(article, number, focus) {
    var id = idOf(article);
    selected[id] = number;
    article.querySelectorAll(".choice-tab").forEach(function (tab) {
      var on = Number(tab.dataset.choice) === number;
      tab.setAttribute("aria-selected", on ? "true" : "false");
      tab.tabIndex = on ? 0 : -1;
      if (on && focus) tab.focus();
    });
    panelsOf(article).forEach(function (panel) {
      panel.hidden = !sideBySide[id] && Number(panel.dataset.choice) !== number;
    });
    renderVisible(article);
  }

  function setLayout(article, columns) {
    var id = idOf(article);
    sideBySide[id] = columns;
    var container = article.querySelector(".choice-panels");
    if (container) container.classList.toggle("side-by-side", columns);
    var button = article.querySelector(".choices-layout");
    if (button) button.setAttribute("aria-pressed", columns ? "true" : "false");
    select(article, selected[id] || 1, false);
  }

  thread.addEventListener("click", function (event) {
    var tab = event.target.closest(".choice-tab");
    var article = event.target.closest("article[data-message-id]");
    if (tab && article) select(article, Number(tab.dataset.choice), false);
    var layout = event.target.closest(".choices-layout");
    if (layout && article) setLayout(article, !sideBySide[idOf(article)]);
  });

  thread.addEventListener("keydown", function (event) {
    var tab = event.target.closest(".choice-tab");
    if (!tab) return;
    var article = tab.closest("article[data-message-id]");
    var tabs = Array.from(article.querySelectorAll(".choice-tab"));
    var at = tabs.indexOf(tab);
    var next = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 }[event.key];
    if (next === undefined) return;
    event.preventDefault();
    next = (next + tabs.length) % tabs.length;
    select(article, Number(tabs[next].dataset.choice), true);
  });

  // "Continue with this one": the choice picked becomes choice 1, the thread's answer, so tab 1 shows it (and
  // keeps the focus the swapped-out button had).
  var picked = {};
  document.addEventListener("htmx:beforeRequest", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches(".choose-form")) return;
    var article = form.closest("article[data-message-id]");
    if (!article) return;
    selected[idOf(article)] = 1;
    picked[idOf(article)] = true;
  });

  // A fresh article (page load, final render, "continue with this one"): its tab and layout as they were.
  document.addEventListener("chat:message", function (event) {
    var article = event.target;
    if (!article.querySelector || !article.querySelector(".choice-tabs")) return;
    var id = idOf(article);
    var focus = picked[id] === true;
    delete picked[id];
    if (article.dataset.status !== "streaming") {
      delete texts[id];
      delete shown[id];
    }
    if (sideBySide[id]) setLayout(article, true);
    else if (selected[id] && article.querySelector('.choice-tab[data-choice="' + selected[id] + '"]')) select(article, selected[id], focus);
  });

  // From stream.js: `snapshot` (a list, or null) replaces the texts, `appended` ({index: text}) extends them.
  function update(article, snapshot, appended) {
    var id = idOf(article);
    var list = texts[id] || (texts[id] = []);
    if (snapshot) {
      list.length = 0;
      Array.prototype.push.apply(list, snapshot);
      shown[id] = {};
    }
    Object.keys(appended || {}).forEach(function (key) {
      var at = Number(key) - 1;
      if (!(at >= 0)) return;
      list[at] = (list[at] || "") + appended[key];
      var tab = article.querySelector('.choice-tab[data-choice="' + (at + 2) + '"]');
      if (tab) tab.classList.add("is-live");
    });
    renderVisible(article);
  }

  // The text each other choice gained in one delta ({index: text}) added to what it gained earlier in the same
  // frame (the stream renderer's queue), so a frame applies them once.
  function merge(gained, choices) {
    gained = gained || {};
    Object.keys(choices).forEach(function (key) {
      gained[key] = (gained[key] || "") + choices[key];
    });
    return gained;
  }

  window.ChatChoices = { update: update, select: select, merge: merge };
})();
