// Small behaviours shared by every page: the phone menu, theme toggle, copy buttons, Ctrl/Cmd+K to search, tabs.
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

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") setMenu(false);
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

  // Input the server refused before any view read it (a NUL character: inputs.py) comes back as a 400 that htmx
  // does not swap: its words go where the page's messages go.
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    if (!xhr.getResponseHeader("X-Refused-Input")) return;
    var flash = document.querySelector(".flash");
    if (!flash) {
      flash = document.createElement("div");
      flash.className = "flash";
      flash.setAttribute("role", "alert");
      document.getElementById("main").before(flash);
    }
    var line = document.createElement("p");
    line.className = "flash-error";
    line.textContent = xhr.responseText;
    flash.replaceChildren(line);
  });

  window.Playground = { copy: copy, selectTab: selectTab };
})();
