// The evaluation page: template highlighting, the live run over the websocket, raw/rendered toggles.
(function () {
  "use strict";

  var root = document.getElementById("evaluation");
  if (!root) { return; }
  var TOKEN = /\\\{\{|\{\{\s*([A-Za-z_][A-Za-z0-9_]{0,63})\s*\}\}/g;
  var columns = (root.dataset.columns || "").split(",").filter(Boolean);
  var empty = (root.dataset.empty || "").split(",").filter(Boolean);  // columns some rows leave empty

  // -- templates: highlight {{variables}}, list them, flag the ones no column fills

  function preview(area) {
    var box = root.querySelector('[data-preview-for="' + area.id + '"]');
    if (!box) { return []; }
    box.textContent = "";
    var text = area.value, at = 0, names = [], match;
    TOKEN.lastIndex = 0;
    while ((match = TOKEN.exec(text)) !== null) {
      if (match.index > at) { box.appendChild(document.createTextNode(text.slice(at, match.index))); }
      var piece = document.createElement(match[1] ? "mark" : "span");
      piece.className = match[1] ? "var" : "escape";
      piece.textContent = match[0];
      if (match[1]) {
        names.push(match[1]);
        if (columns.indexOf(match[1]) < 0) { piece.classList.add("is-missing"); piece.title = "No test-case column has this name"; }
      }
      box.appendChild(piece);
      at = TOKEN.lastIndex;
    }
    if (at < text.length) { box.appendChild(document.createTextNode(text.slice(at))); }
    return names;
  }

  function refreshVariables() {
    var names = [];
    root.querySelectorAll("textarea[data-template]").forEach(function (area) {
      preview(area).forEach(function (name) { if (names.indexOf(name) < 0) { names.push(name); } });
    });
    var list = document.getElementById("variable-list");
    if (!list) { return; }
    list.textContent = "";
    if (!names.length) {
      var none = document.createElement("li"); none.className = "muted"; none.textContent = "none"; list.appendChild(none);
    }
    names.forEach(function (name) {
      var item = document.createElement("li");
      item.dataset.variable = name;
      item.textContent = name;
      if (columns.indexOf(name) < 0) {
        item.classList.add("is-missing"); item.textContent = name + " · no column (added on save)";
      } else if (empty.indexOf(name) >= 0) {
        item.classList.add("is-missing"); item.textContent = name + " · empty in some rows";
      }
      list.appendChild(item);
    });
  }

  root.querySelectorAll("textarea[data-template]").forEach(function (area) {
    area.addEventListener("input", refreshVariables);
  });

  // -- cells: raw toggle

  root.addEventListener("click", function (event) {
    var toggle = event.target.closest("[data-toggle-raw]");
    if (!toggle) { return; }
    var cell = toggle.closest(".cell");
    var raw = cell.querySelector(".raw"), rendered = cell.querySelector(".rendered");
    var showRaw = raw.hidden;
    raw.hidden = !showRaw; rendered.hidden = showRaw;
    toggle.textContent = showRaw ? "rendered" : "raw";
  });

  // -- the compact grid: arrow keys move between cells (one tab stop), Enter or a click opens the whole answer

  var grid = root.querySelector("[data-grid]");

  function cellAt(row, column) {
    var cells = row ? row.querySelectorAll("td.gcell") : [];
    return cells[Math.min(column, cells.length - 1)] || null;
  }

  function moveTo(from, to) {
    if (!to) { return; }
    from.tabIndex = -1;
    to.tabIndex = 0;
    to.focus();
  }

  function toggle(td) {
    var open = td.classList.toggle("is-expanded");
    td.dataset.expanded = open ? "true" : "false";
  }

  function watchGrid(grid) {
    grid.addEventListener("keydown", function (event) {
      var td = event.target;
      if (!td.matches || !td.matches("td.gcell")) { return; }
      var row = td.parentElement;
      var column = Array.prototype.indexOf.call(row.querySelectorAll("td.gcell"), td);
      var target = null;
      if (event.key === "ArrowRight") { target = cellAt(row, column + 1); }
      else if (event.key === "ArrowLeft") { target = column > 0 ? cellAt(row, column - 1) : null; }
      else if (event.key === "ArrowDown") { target = cellAt(row.nextElementSibling, column); }
      else if (event.key === "ArrowUp") { target = cellAt(row.previousElementSibling, column); }
      else if (event.key === "Enter" || event.key === " ") { event.preventDefault(); toggle(td); return; }
      else { return; }
      event.preventDefault();
      moveTo(td, target);
    });
    grid.addEventListener("click", function (event) {
      var td = event.target.closest("td.gcell");
      if (!td || event.target.closest("button, a, input, textarea, select, form, pre.raw")) { return; }
      var current = grid.querySelector('td.gcell[tabindex="0"]');
      if (current && current !== td) { current.tabIndex = -1; }
      td.tabIndex = 0;
      toggle(td);
    });
  }
  if (grid) { watchGrid(grid); }

  // -- the live run

  var status = document.getElementById("run-status");
  var socket = null, queue = [];

  function say(text, isError) {
    status.textContent = text;
    status.classList.toggle("cell-error", Boolean(isError));
  }

  function fromHtml(html) {
    var template = document.createElement("template");
    template.innerHTML = html.trim();
    return template.content.firstElementChild;
  }

  function replace(id, html) {
    var old = document.getElementById(id);
    var fresh = html && fromHtml(html);
    if (!old || !fresh) { return; }
    old.replaceWith(fresh);
    if (window.htmx) { window.htmx.process(fresh); }
  }

  var counts = { total: 0, ended: 0 };

  function seconds(ms) {
    return ms < 1000 ? ms + " ms" : (ms / 1000).toFixed(1) + " s";
  }

  function onMessage(event) {
    var data = JSON.parse(event.data);
    if (data.type === "start") {
      // A new run makes new cells: a page on an earlier run goes to the latest; the grid's cells take the ids of
      // the new run's cells in their places (row-variant), so its updates land there.
      if (!data.judging && root.dataset.earlier === "1") { location.assign(location.pathname + "#grid"); return; }
      counts = { total: data.cells.length, ended: 0 };
      // A cell waiting its turn shows "queued", not the badge of the run before.
      (data.judging ? [] : data.cells).forEach(function (id, index) {
        var key = (data.keys || [])[index];
        var cell = document.getElementById("cell-" + id) || (key && root.querySelector('.cell[data-key="' + key + '"]'));
        if (!cell) { return; }
        cell.id = "cell-" + id;
        cell.dataset.cell = id;
        cell.dataset.status = "queued";
        cell.className = cell.className.replace(/\bcell-\w+\b/, "cell-queued");
        var badge = cell.querySelector(".cell-head .badge");
        if (badge) { badge.textContent = "queued"; badge.className = "badge badge-accent"; }
      });
      // A run taken up by another process after a restart (evaluate/resume.py) sends only the cells left.
      say((data.resumed ? "Going on after a server restart: " : "Running ") + counts.total + " cell" +
        (counts.total === 1 ? "" : "s") + (data.resumed ? " left" : "") + ", " + data.concurrency + " at a time…");
    } else if (data.type === "delta") {
      var cell = document.getElementById("cell-" + data.id);
      var live = cell && cell.querySelector(".live-text");
      if (live && data.waiting) { live.dataset.waiting = "1"; live.textContent = data.waiting; }
      else if (live) {
        if (live.dataset.waiting) { delete live.dataset.waiting; live.textContent = ""; }
        live.textContent += data.text;
      }
    } else if (data.type === "cell") {
      replace("cell-" + data.id, data.html);
      if (["done", "error", "stopped", "skipped"].indexOf(data.status) >= 0 && counts.ended < counts.total) {
        counts.ended += 1;
        if (counts.total) { say(counts.ended + " of " + counts.total + " cells finished…"); }
      }
    } else if (data.type === "summary" || data.type === "end") {
      replace("summary-row", data.html);
      if (data.type === "end") {
        say("Run finished: " + counts.ended + " of " + counts.total + " cells in " + seconds(data.elapsed_ms) + ".");
        if (data.run) { refresh(); } else { root.dataset.runState = "ended"; }
      }
    } else if (data.type === "error") {
      say(data.message, true);
    }
  }

  // After a run: the runs list and the grid as the server has them now (every cell of the new run, with its own
  // rating form), read from the page itself.
  function refresh() {
    // The same view and page of rows, of the latest run (the one that just ended).
    var params = new URLSearchParams(location.search);
    params.delete("run");
    var query = params.toString();
    fetch(location.pathname + (query ? "?" + query : ""), { credentials: "same-origin" })
      .then(function (response) { return response.text(); })
      .then(function (html) {
        var page = new DOMParser().parseFromString(html, "text/html");
        ["runs", "grid"].forEach(function (id) {
          var fresh = page.getElementById(id), old = document.getElementById(id);
          if (fresh && old) {
            old.replaceWith(fresh);
            if (window.htmx) { window.htmx.process(fresh); }
          }
        });
        grid = root.querySelector("[data-grid]");
        if (grid) { watchGrid(grid); }
      })
      .finally(function () { root.dataset.runState = "ended"; });
  }

  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + root.dataset.wsUrl);
    socket.addEventListener("open", function () {
      root.dataset.socket = "open";
      queue.splice(0).forEach(function (message) { socket.send(message); });
    });
    socket.addEventListener("message", onMessage);
    socket.addEventListener("close", function (event) {
      root.dataset.socket = "closed";
      socket = null;
      // 4012: the server is restarting (playground/lib/drain.py); another process takes the socket at once.
      setTimeout(connect, event.code === 4012 ? 200 : 2000);
    });
  }

  function send(message) {
    var text = JSON.stringify(message);
    if (socket && socket.readyState === WebSocket.OPEN) { socket.send(text); } else { queue.push(text); }
  }

  document.addEventListener("click", function (event) {
    var run = event.target.closest("[data-run]");
    if (run) {
      var concurrency = parseInt(document.getElementById("concurrency").value, 10);
      root.dataset.runState = "running";
      var sendEmpty = document.getElementById("send-empty");
      send({
        type: "run", scope: run.dataset.run, target: run.dataset.target || 0,
        concurrency: isNaN(concurrency) ? 4 : concurrency, send_empty: Boolean(sendEmpty && sendEmpty.checked)
      });
      say("Starting…");
      return;
    }
    if (event.target.closest("[data-stop]")) {
      send({ type: "stop" });
      say("Stopping…");
    }
  });

  connect();
})();
