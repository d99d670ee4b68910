// Math in model output on pages without the chat's scripts (share pages, batch results): the server leaves TeX in
// <span class="math math-inline"> / <div class="math math-display"> (playground/chat/math.py); KaTeX typesets it
// as MathML, which needs no inline styles (share pages forbid them) and no fonts. Messages a live share appends
// later are typeset as they arrive.
(function () {
  "use strict";
  if (!window.katex || !window.DOMPurify) return;
  var purify = window.DOMPurify(window);
  var OPTIONS = { throwOnError: false, trust: false, strict: "ignore", maxSize: 20, maxExpand: 1000, output: "mathml" };

  function typeset(root) {
    if (!root || !root.querySelectorAll) return;
    var nodes = root.matches && root.matches(".math:not([data-tex])") ? [root] : [];
    root.querySelectorAll(".math:not([data-tex])").forEach(function (node) { nodes.push(node); });
    nodes.forEach(function (node) {
      var tex = node.textContent;
      var html;
      try {
        html = window.katex.renderToString(tex, Object.assign({ displayMode: node.classList.contains("math-display") }, OPTIONS));
      } catch (e) {
        return;
      }
      node.setAttribute("data-tex", tex);
      node.innerHTML = purify.sanitize(html, { USE_PROFILES: { html: true, mathMl: true }, ALLOW_DATA_ATTR: false });
    });
  }

  typeset(document.body);
  new MutationObserver(function (changes) {
    changes.forEach(function (change) { change.addedNodes.forEach(typeset); });
  }).observe(document.body, { childList: true, subtree: true });
})();
