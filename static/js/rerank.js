// Rerank page: a live count of the pasted documents.
(function () {
  "use strict";

  function count(area) {
    var lines = area.value.split("\n").filter(function (line) { return line.trim() !== ""; }).length;
    return lines === 1 ? "1 line" : lines + " lines";
  }

  function update() {
    document.querySelectorAll("[data-count-lines]").forEach(function (label) {
      var area = document.querySelector(label.dataset.countLines);
      if (area) label.textContent = count(area);
    });
  }

  document.addEventListener("input", function (event) {
    if (event.target.matches("textarea[name=documents]")) update();
  });
  document.addEventListener("htmx:afterSettle", update);
  document.addEventListener("DOMContentLoaded", update);
})();
