// Speech page: [S1]/[S2] insertion, the character count, voice vs. reference voices, sample rates per format,
// and playing a new clip as soon as its player arrives.
(function () {
  "use strict";

  function readJSON(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : {};
  }

  function insertTag(button) {
    var area = document.getElementById("id_input");
    if (!area) return;
    var tag = button.dataset.insertTag;
    var start = area.selectionStart, end = area.selectionEnd, value = area.value;
    var before = value.slice(0, start);
    if (before && !/\s$/.test(before)) tag = (before.endsWith("\n") ? "" : "\n") + tag;
    area.value = before + tag + value.slice(end);
    area.selectionStart = area.selectionEnd = start + tag.length;
    area.focus();
    updateCount();
  }

  function updateCount() {
    var area = document.getElementById("id_input"), counter = document.getElementById("char-count");
    if (!area || !counter) return;
    var limit = Number(counter.dataset.limit), length = area.value.length;
    counter.textContent = length.toLocaleString("en-US");
    counter.classList.toggle("over", length > limit);
  }

  function updateVoiceMode() {
    var checked = document.querySelector("input[name=voice_mode]:checked");
    if (!checked) return;
    document.querySelectorAll("[data-voice-group]").forEach(function (group) {
      group.disabled = group.dataset.voiceGroup !== checked.value;
    });
  }

  function updateSampleRates() {
    var format = document.querySelector("select[name=response_format]");
    var rate = document.querySelector("select[name=sample_rate]");
    if (!format || !rate) return;
    var rates = readJSON("sample-rates")[format.value] || [];
    var fallback = String(readJSON("default-rates")[format.value] || rates[rates.length - 1]);
    if (!rate.dataset.all) rate.dataset.all = JSON.stringify(Array.from(rate.options).map(function (o) { return o.value; }));
    var current = rate.value;
    rate.innerHTML = "";
    rates.forEach(function (value) {
      var option = document.createElement("option");
      option.value = String(value);
      option.textContent = value + " Hz";
      rate.appendChild(option);
    });
    rate.value = rates.map(String).indexOf(current) >= 0 ? current : fallback;
  }

  function playNew(root) {
    (root || document).querySelectorAll("audio[data-autoplay]").forEach(function (audio) {
      if (audio.dataset.started) return;
      audio.dataset.started = "1";
      var attempt = audio.play();
      if (attempt && attempt.catch) attempt.catch(function () { /* autoplay refused: the controls remain */ });
    });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-insert-tag]");
    if (button) insertTag(button);
  });
  document.addEventListener("input", function (event) {
    if (event.target.id === "id_input") updateCount();
  });
  document.addEventListener("change", function (event) {
    if (event.target.name === "voice_mode") updateVoiceMode();
    if (event.target.name === "response_format") updateSampleRates();
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    updateVoiceMode();
    updateSampleRates();
    updateCount();
    playNew(event.target);
  });
  document.addEventListener("DOMContentLoaded", function () {
    updateCount();
    updateVoiceMode();
    updateSampleRates();
    // A reopened clip is not played automatically; a freshly created one (htmx) is.
    document.querySelectorAll("audio[data-autoplay]").forEach(function (a) { a.dataset.started = "1"; });
  });
})();
