// The Tools tab: the JSON editor says what is wrong (line and column) as it is typed and keeps the text until it
// is fixed (the server keeps it too), and a small form adds a function (name, description, parameters) to it.
(function () {
  "use strict";

  var NAME = /^[A-Za-z0-9_-]{1,64}$/;

  // Where JSON.parse stopped, as "line L, column C" (V8 says "at position N", sometimes with the line already).
  function where(text, message) {
    var found = /line (\d+) column (\d+)/.exec(message);
    if (found) return { line: Number(found[1]), column: Number(found[2]) };
    found = /position (\d+)/.exec(message);
    var position = found ? Number(found[1]) : text.length;
    var before = text.slice(0, position).split("\n");
    return { line: before.length, column: before[before.length - 1].length + 1 };
  }

  // The same words as the server's check (forms.parse_tools) for the parse step, where and not why (each parser
  // words the why its own way); "" when the text is fine.
  function problem(text) {
    if (!text.trim()) return "";
    var value;
    try {
      value = JSON.parse(text);
    } catch (error) {
      var at = where(text, String(error.message));
      return "tools: not valid JSON at line " + at.line + ", column " + at.column + ".";
    }
    if (!Array.isArray(value)) return "tools: must be a JSON array of tools.";
    return "";
  }

  function show(text) {
    var box = document.getElementById("id_tools");
    var error = document.getElementById("tools-error");
    if (!box || !error) return;
    error.textContent = text;
    error.hidden = !text;
    box.closest(".field").classList.toggle("has-error", !!text);
    if (text) box.setAttribute("aria-invalid", "true");
    else box.removeAttribute("aria-invalid");
  }

  function save() {
    var form = document.getElementById("settings-form");
    if (form && window.htmx) window.htmx.trigger(form, "settings-change");
  }

  var timer = null;
  document.addEventListener("input", function (event) {
    if (event.target.id !== "id_tools") return;
    clearTimeout(timer);
    var text = event.target.value;
    timer = setTimeout(function () { show(problem(text)); }, 250);
  });

  function builderError(text) {
    var error = document.getElementById("tool-builder-error");
    if (!error) return;
    error.textContent = text;
    error.hidden = !text;
  }

  function addTool() {
    var box = document.getElementById("id_tools");
    var name = document.getElementById("tool-name").value.trim();
    var description = document.getElementById("tool-description").value.trim();
    var schemaText = document.getElementById("tool-parameters").value.trim();
    if (!NAME.test(name)) {
      builderError("name: a-z, A-Z, 0-9, underscore and dash only, 1 to 64 characters.");
      return;
    }
    var parameters = null;
    if (schemaText) {
      try {
        parameters = JSON.parse(schemaText);
      } catch (error) {
        var at = where(schemaText, String(error.message));
        builderError("parameters: not valid JSON at line " + at.line + ", column " + at.column + ".");
        return;
      }
      if (!parameters || typeof parameters !== "object" || Array.isArray(parameters)) {
        builderError("parameters: must be a JSON Schema object, e.g. {\"type\": \"object\", \"properties\": {}}.");
        return;
      }
    }
    var current = box.value.trim();
    if (problem(current)) {
      builderError("Fix the tools JSON above first: " + problem(current));
      return;
    }
    var tools = current ? JSON.parse(current) : [];
    if (tools.length >= 128) {
      builderError("tools: at most 128 functions.");
      return;
    }
    var fn = { name: name };
    if (description) fn.description = description;
    if (parameters) fn.parameters = parameters;
    var tool = { type: "function", function: fn };
    var index = tools.findIndex(function (item) { return item && item.function && item.function.name === name; });
    if (index >= 0) tools[index] = tool;
    else tools.push(tool);
    box.value = JSON.stringify(tools, null, 2);
    builderError("");
    show("");
    document.getElementById("tool-name").value = "";
    document.getElementById("tool-description").value = "";
    save();
  }

  document.addEventListener("click", function (event) {
    if (event.target.closest("[data-add-tool]")) addTool();
  });

  // Results on their way: the composer's "answer the tool calls first" notice no longer applies.
  document.addEventListener("htmx:beforeRequest", function (event) {
    if (!event.target.classList || !event.target.classList.contains("tool-calls")) return;
    var notice = document.querySelector("#composer .composer-errors");
    if (notice) notice.remove();
  });
})();
