// Apply the saved theme before first paint to avoid a flash (loaded without defer, in <head>).
(function () {
  "use strict";
  var theme = localStorage.getItem("theme");
  if (theme) document.documentElement.dataset.theme = theme;
})();
