// The composer's attachments: chosen or pasted files show as chips, and the file input holds exactly the files
// listed, so the htmx form posts them as any form would (multipart). The accepted types follow the model.
// Images and videos get their content-part options on the chip (detail; fps and max_frams for videos), posted
// as one JSON array in the files' order (attachment_options).
(function () {
  "use strict";

  var pending = []; // the File objects chosen for the next message, in order
  var options = []; // their options ({detail, fps, max_frams}), in the same order

  function input() { return document.getElementById("composer-files"); }

  // The input's own list is replaced by each choice; it is rebuilt from `pending` so choices add up.
  function mirror() {
    var files = input();
    if (!files) return;
    var transfer = new DataTransfer();
    pending.forEach(function (file) { transfer.items.add(file); });
    files.files = transfer.files;
    var hidden = document.getElementById("attachment-options");
    if (hidden) hidden.value = pending.length ? JSON.stringify(options) : "";
  }

  function kindOf(file) {
    var type = file.type || "";
    if (type.indexOf("video/") === 0) return "video";
    if (type.indexOf("image/") === 0) return "image";
    return "";
  }

  function control(index, name, label, build) {
    var wrap = document.createElement("label");
    wrap.className = "chip-option";
    var text = document.createElement("span");
    text.className = "muted";
    text.textContent = label;
    var field = build();
    field.dataset.attachmentOption = name;
    field.dataset.index = String(index);
    field.setAttribute("aria-label", label + " of " + pending[index].name);
    wrap.appendChild(text);
    wrap.appendChild(field);
    return wrap;
  }

  function optionControls(file, index) {
    var kind = kindOf(file);
    var box = document.createElement("span");
    box.className = "chip-options";
    if (!kind) return box;
    box.appendChild(control(index, "detail", "detail", function () {
      var select = document.createElement("select");
      ["auto", "low", "high"].forEach(function (value) {
        var option = document.createElement("option");
        option.value = value;
        option.textContent = value;
        select.appendChild(option);
      });
      select.value = options[index].detail || "auto";
      return select;
    }));
    if (kind === "video") {
      [["fps", "fps", 60], ["max_frams", "max_frams", 10000]].forEach(function (spec) {
        box.appendChild(control(index, spec[0], spec[1], function () {
          var number = document.createElement("input");
          number.type = "number";
          number.min = "1";
          number.max = String(spec[2]);
          number.step = "1";
          number.inputMode = "numeric";
          number.placeholder = "auto";
          number.value = options[index][spec[0]] || "";
          return number;
        }));
      });
    }
    return box;
  }

  function formatSize(size) {
    if (size >= 1024 * 1024) return (size / (1024 * 1024)).toFixed(1) + " MB";
    return Math.max(1, Math.round(size / 1024)) + " KB";
  }

  function chip(file, index) {
    var item = document.createElement("li");
    item.className = "chip";
    var name = document.createElement("span");
    name.className = "chip-name";
    name.textContent = file.name;
    name.title = file.name;
    var size = document.createElement("span");
    size.className = "chip-size muted mono";
    size.textContent = formatSize(file.size);
    var remove = document.createElement("button");
    remove.type = "button";
    remove.className = "chip-remove";
    remove.setAttribute("aria-label", "Remove " + file.name);
    remove.dataset.removeAttachment = String(index);
    remove.textContent = "×";
    item.appendChild(name);
    item.appendChild(size);
    item.appendChild(optionControls(file, index));
    item.appendChild(remove);
    return item;
  }

  function render() {
    var list = document.getElementById("attachment-chips");
    if (!list) return;
    list.textContent = "";
    pending.forEach(function (file, index) { list.appendChild(chip(file, index)); });
    list.hidden = pending.length === 0;
  }

  function add(files) {
    Array.prototype.forEach.call(files || [], function (file) {
      pending.push(file);
      options.push({});
    });
    mirror();
    render();
  }

  // After the panel or the composer is re-rendered: the accept list of the selected model (the panel carries
  // it), no button when the model takes no files, and the chosen files back in the new input.
  function sync() {
    var panel = document.getElementById("start-model") || document.getElementById("panel");
    var files = input();
    var button = document.getElementById("attach-button");
    if (panel && files && panel.hasAttribute("data-attach-accept")) files.accept = panel.dataset.attachAccept;
    if (button && files) button.hidden = !files.accept;
    mirror();
    render();
  }

  document.addEventListener("change", function (event) {
    var option = event.target.dataset && event.target.dataset.attachmentOption;
    if (option) {
      var chosen = options[Number(event.target.dataset.index)];
      var value = event.target.value;
      if (option === "detail") value = value === "auto" ? "" : value;
      else value = value === "" ? "" : Number(value);
      if (value === "") delete chosen[option];
      else chosen[option] = value;
      mirror();
      return;
    }
    if (event.target.id !== "composer-files") return;
    add(Array.prototype.slice.call(event.target.files || []));
  });

  document.addEventListener("paste", function (event) {
    var button = document.getElementById("attach-button");
    var files = event.clipboardData && event.clipboardData.files;
    if (event.target.id === "composer-input" && button && !button.hidden && files && files.length) {
      event.preventDefault();
      add(files);
    }
  });

  document.addEventListener("click", function (event) {
    var target = event.target.closest("[data-attach], [data-remove-attachment]");
    if (!target) return;
    if (target.hasAttribute("data-attach")) {
      var files = input();
      if (files) files.click();
      return;
    }
    pending.splice(Number(target.dataset.removeAttachment), 1);
    options.splice(Number(target.dataset.removeAttachment), 1);
    mirror();
    render();
    var box = document.getElementById("composer-input");
    if (box) box.focus();
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail.target;
    if (target && (target.id === "panel" || target.id === "composer" || target.id === "start-model")) sync();
  });

  // A sent message took its files along: the next one starts with none.
  document.addEventListener("chat:sent", function () {
    pending = [];
    options = [];
    mirror();
    render();
  });

  sync();
})();
