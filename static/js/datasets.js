// Dataset imports: a file over the limit is refused in the browser, before anything is sent, in the server's words.
(function () {
  function megabytes(size) {
    return (size / (1024 * 1024)).toFixed(1).replace(/\.0$/, "") + " MB";
  }
  document.addEventListener("change", function (event) {
    var input = event.target;
    if (!input.matches || !input.matches("input[type=file][data-max-bytes]")) return;
    var limit = Number(input.dataset.maxBytes);
    var file = input.files && input.files[0];
    var words = "";
    if (file && file.size > limit) {
      words = "file: " + megabytes(file.size) + "; the limit is " + megabytes(limit) + " per import. Nothing was imported.";
    }
    input.setCustomValidity(words);
    if (words) input.reportValidity();
  });
})();
