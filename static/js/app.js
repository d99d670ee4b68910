// Small behaviours shared by every page: the phone menu, theme toggle, copy buttons, Ctrl/Cmd+K to search, tabs,
// "?" for the list of keyboard shortcuts (templates/kit/_shortcuts.html), and the focus kept across htmx swaps.
(function () {
  "use strict";

  function toggleTheme() {
    var root = document.documentElement;
    var dark = root.dataset.theme === "dark" ||
      (root.dataset.theme !== "light" && window.matchMedia("(prefers-color-scheme: dark)").matches);
    root.dataset.theme = dark ? "light" : "dark";
    localStorage.setItem("theme", root.dataset.theme);
  }

  function copy(button) {
    var text = button.dataset.copy;
    if (text === undefined && button.dataset.copyTarget) {
      var target = document.querySelector(button.dataset.copyTarget);
      text = target ? target.innerText : "";
    }
    var done = function () {
      var label = button.textContent;
      button.classList.add("copied");
      button.textContent = "Copied";
      setTimeout(function () { button.classList.remove("copied"); button.textContent = label; }, 1200);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, done);
    } else {
      var area = document.createElement("textarea");
      area.value = text; document.body.appendChild(area); area.select();
      try { document.execCommand("copy"); } catch (e) { /* nothing more to do */ }
      area.remove(); done();
    }
  }

  function selectTab(tab) {
    var list = tab.closest("[role=tablist]");
    list.querySelectorAll("[role=tab]").forEach(function (t) {
      var selected = t === tab;
      t.setAttribute("aria-selected", selected ? "true" : "false");
      t.tabIndex = selected ? 0 : -1;
      var panel = document.getElementById(t.getAttribute("aria-controls"));
      if (panel) panel.hidden = !selected;
    });
    tab.dispatchEvent(new CustomEvent("tab:selected", { bubbles: true }));
  }

  function setMenu(open) {
    var button = document.querySelector(".nav-toggle");
    var nav = document.getElementById("mainnav");
    if (!button || !nav) return;
    nav.classList.toggle("open", open);
    button.setAttribute("aria-expanded", open ? "true" : "false");
  }

  document.addEventListener("click", function (event) {
    var toggle = event.target.closest(".nav-toggle");
    if (toggle) { setMenu(toggle.getAttribute("aria-expanded") !== "true"); return; }
    if (!event.target.closest("#mainnav")) setMenu(false);
    if (event.target.closest("[data-show-shortcuts]")) { showShortcuts(); return; }
    if (event.target.closest("[data-close-dialog]")) { event.target.closest("dialog").close(); return; }
    var target = event.target.closest("#theme-toggle, .copy-button, [role=tab], [data-toggle-drawer]");
    if (!target) return;
    if (target.id === "theme-toggle") toggleTheme();
    else if (target.classList.contains("copy-button")) copy(target);
    else if (target.getAttribute("role") === "tab") selectTab(target);
    else {
      var drawer = document.getElementById(target.dataset.toggleDrawer);
      if (drawer) drawer.classList.toggle("open");
    }
  });

  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }

  function showShortcuts() {
    var dialog = document.getElementById("shortcuts");
    if (dialog && !dialog.open) dialog.showModal();
  }

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") setMenu(false);
    if (event.key === "?" && !typing(event.target) && !event.ctrlKey && !event.metaKey && !event.altKey) {
      event.preventDefault();
      showShortcuts();
      return;
    }
    if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "k") {
      var search = document.querySelector("[data-search]");
      if (search) { event.preventDefault(); search.focus(); search.select(); }
    }
    var tab = event.target.closest && event.target.closest("[role=tab]");
    if (tab && (event.key === "ArrowRight" || event.key === "ArrowLeft")) {
      var tabs = Array.from(tab.closest("[role=tablist]").querySelectorAll("[role=tab]"));
      var next = tabs[(tabs.indexOf(tab) + (event.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
      next.focus(); selectTab(next);
    }
  });

  // Forms that ask first (data-confirm) and selects that submit their form on change (data-autosubmit):
  // attributes instead of inline handlers, which the Content-Security-Policy forbids.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) event.preventDefault();
  }, true);

  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches("[data-autosubmit]") && event.target.form) {
      event.target.form.requestSubmit();
    }
  });

  // Input the server refused before any view read it (a NUL character: inputs.py) comes back as a 400 in words.
  // It is not swapped, nor an error of htmx's (which would also log it): the form that sent it hears
  // `playground:refused` and may show the words itself (the composer does, in its own box); otherwise they go where
  // the page's messages go.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    if (!xhr || !xhr.getResponseHeader("X-Refused-Input")) return;
    event.detail.shouldSwap = false;
    event.detail.isError = false;
    var sender = (event.detail.requestConfig && event.detail.requestConfig.elt) || event.target;
    var told = new CustomEvent("playground:refused", { bubbles: true, cancelable: true, detail: { text: xhr.responseText } });
    if (sender.dispatchEvent(told)) flash(xhr.responseText);
  });

  function flash(text) {
    var flash = document.querySelector(".flash");
    if (!flash) {
      flash = document.createElement("div");
      flash.className = "flash";
      flash.setAttribute("role", "alert");
      document.getElementById("main").before(flash);
    }
    var line = document.createElement("p");
    line.className = "flash-error";
    line.textContent = text;
    flash.replaceChildren(line);
  }


  // Where the focus is, in words that survive a re-render: the nearest element with an id around it, the control's
  // kind and name, and the place of its article in the thread (a new branch puts a new article in the same place).
  function focusPlace() {
    var active = document.activeElement;
    if (!active || active === document.body) return null;
    var holder = active.closest("[id]");
    var article = active.closest("article[data-message-id]");
    var articles = article ? Array.from(document.querySelectorAll("#message-list article[data-message-id]")) : [];
    return {
      element: active,
      holder: holder ? holder.id : "",
      tag: active.tagName,
      label: active.getAttribute("aria-label") || active.textContent.trim(),
      article: article ? articles.indexOf(article) : -1,
    };
  }

  function focusable(node) {
    if (node.tabIndex < 0 && !node.hasAttribute("tabindex")) node.setAttribute("tabindex", "-1");
    node.focus({ preventScroll: true });
    return document.activeElement === node;
  }

  // The focus back where it was when a re-render took the focused element away; nothing when it is still there.
  function restoreFocus(place, fallback) {
    if (!place || (document.activeElement && document.activeElement !== document.body)) return;
    // Still there but blurred (disabled, or its tabindex taken away by a re-render).
    if (document.contains(place.element) && !place.element.disabled && focusable(place.element)) return;
    var roots = [];
    if (place.holder && document.getElementById(place.holder)) roots.push(document.getElementById(place.holder));
    if (place.article >= 0) {
      var articles = document.querySelectorAll("#message-list article[data-message-id]");
      var same = articles[Math.min(place.article, articles.length - 1)];
      if (same) roots.push(same);
    }
    for (var i = 0; i < roots.length; i++) {
      var match = [roots[i]].concat(Array.from(roots[i].querySelectorAll(place.tag))).find(function (node) {
        return node.tagName === place.tag && !node.disabled && node.offsetParent !== null &&
          (node.getAttribute("aria-label") || node.textContent.trim()) === place.label;
      });
      if (match && focusable(match)) return;
    }
    var last = roots[0] || (typeof fallback === "string" ? document.querySelector(fallback) : fallback) || document.getElementById("main");
    if (last && document.contains(last)) focusable(last);
  }

  // An htmx swap that takes away the focused element gives the focus back, so that a keyboard user goes on from
  // where they were (the thread's re-renders over the websocket do the same, stream.js).
  // Taken when the request starts too: hx-disabled-elt disables (and so blurs) the pressed button before the swap.
  var placeBefore = null;
  document.addEventListener("htmx:beforeRequest", function () {
    placeBefore = focusPlace();
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    placeBefore = focusPlace() || placeBefore;
    if (placeBefore) placeBefore.target = event.detail.target;
  });
  document.addEventListener("htmx:afterSettle", function () {
    var place = placeBefore;
    placeBefore = null;
    if (!place) return;
    var target = place.target && (document.contains(place.target) ? place.target : place.target.id && document.getElementById(place.target.id));
    restoreFocus(place, target || null);
  });

  window.Playground = { copy: copy, selectTab: selectTab, focusPlace: focusPlace, restoreFocus: restoreFocus };
})();
