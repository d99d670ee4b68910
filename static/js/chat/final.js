// The final render of an answer, put in place of its live render.
//
// It replaces the article's header, thinking, meta and error parts; the body the user has been reading stays in
// place and only gains the last block, so a long answer is neither parsed nor laid out again. The blocks already
// shown are cut out of the final HTML before parsing when they are its exact prefix; otherwise the whole article
// is replaced. Used by the stream renderer (stream.js).
(function () {
  "use strict";

  var BLOCKS = '<div class="blocks">';

  function parse(html) {
    var template = document.createElement("template");
    template.innerHTML = html.trim();
    return template.content;
  }

  // Moves the parts of `fresh` around the kept body into `article`, and takes on its attributes.
  function patch(article, fresh, oldBody, newBody) {
    Array.from(article.childNodes).forEach(function (node) {
      if (node !== oldBody) node.remove();
    });
    var before = true;
    Array.from(fresh.childNodes).forEach(function (node) {
      if (node === newBody) { before = false; return; }
      if (before) article.insertBefore(node, oldBody);
      else article.appendChild(node);
    });
    Array.from(article.attributes).forEach(function (attribute) {
      if (!fresh.hasAttribute(attribute.name)) article.removeAttribute(attribute.name);
    });
    Array.from(fresh.attributes).forEach(function (attribute) {
      article.setAttribute(attribute.name, attribute.value);
    });
  }

  // live: the HTML of the finished blocks shown so far (null when unknown). Returns the article now on the page
  // and whether it was patched in place, or null when the HTML holds no article.
  function apply(article, html, live) {
    var oldBody = article.querySelector(".message-body");
    var oldBlocks = oldBody && oldBody.querySelector(".blocks");
    if (live === null && oldBlocks && !oldBlocks.firstChild) live = "";
    var at = html.indexOf(BLOCKS) + BLOCKS.length;
    // The body must be the article's own child to be kept (not inside the panels of n > 1 choices).
    var prefix = oldBlocks && oldBody.parentNode === article && live !== null && at >= BLOCKS.length && html.substr(at, live.length) === live;
    var fresh = parse(prefix ? html.slice(0, at) + html.slice(at + live.length) : html).querySelector("article");
    if (!fresh) return null;
    var newBody = fresh.querySelector(".message-body");
    var newBlocks = newBody && newBody.querySelector(".blocks");
    if (!prefix || !newBlocks) {
      article.replaceWith(fresh);
      return { article: fresh, patched: false };
    }
    var fragment = document.createDocumentFragment();
    while (newBlocks.firstChild) fragment.appendChild(newBlocks.firstChild);
    oldBlocks.appendChild(fragment);
    var tail = oldBody.querySelector(".tail");
    tail.textContent = "";
    tail.__text = "";
    oldBody.hidden = newBody.hidden;
    patch(article, fresh, oldBody, newBody);
    return { article: article, patched: true };
  }

  window.ChatFinal = { apply: apply };
})();
