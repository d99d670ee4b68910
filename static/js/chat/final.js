// The final render of an answer, put in place of its live render.
//
// It replaces the article's header, thinking, meta and error parts; the body the user has been reading stays in
// place, so a long answer is neither parsed nor laid out again. The blocks already shown are cut out of the final
// HTML before parsing when they are its exact prefix; otherwise the whole article is replaced. What is left of the
// final HTML is the server's render of the live tail, which the page's own renderer already shows (markdown.js
// follows the same rules): the nodes shown stay, and the final render changes only those that differ (the words
// that came after the tail's last render, a code block's highlighting), then they move from the tail to the blocks,
// as a reload has them. So the end of an answer costs no swap of what is shown. Used by the stream renderer
// (stream.js).
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
    // (Nor is it when the final article holds its body in the panels of n > 1 choices.)
    if (!prefix || !newBlocks || newBody.parentNode !== fresh) {
      article.replaceWith(fresh);
      return { article: fresh, patched: false };
    }
    var changed = settle(oldBody.querySelector(".tail"), oldBlocks, newBlocks);
    oldBody.hidden = newBody.hidden;
    patch(article, fresh, oldBody, newBody);
    return { article: article, patched: true, changed: changed };
  }

  // The tail's nodes brought to `final` (the server's render of the same text), then moved, not made again, to the
  // end of the blocks: the body ends as a reload shows it. Returns how many nodes changed.
  function settle(tail, blocks, final) {
    var changed = settleTail(tail, final);
    var fragment = document.createDocumentFragment();
    while (tail.firstChild) fragment.appendChild(tail.firstChild);
    blocks.appendChild(fragment);
    tail.classList.remove("tail-live");
    tail.__text = "";
    return changed;
  }

  // The last words of an answer whose end came without its article (relay/generation.py: `last`, the server's
  // render of the text the tail shows, sanitized as every delta's blocks): settled into the blocks in place.
  function settleLast(body, html) {
    var blocks = body.querySelector(".blocks");
    var tail = body.querySelector(".tail");
    if (!blocks || !tail) return null;
    var template = document.createElement("template");
    template.innerHTML = html; // not trimmed: the blocks keep the line ends a reload's have between them
    return settle(tail, blocks, template.content);
  }

  // The tail shows the page's render of the last text (markdown.js, which follows the server's rules, or the text
  // itself when it is too long to render live); `final` holds the server's render of the same text. The tail is
  // brought to it by changing only the nodes that differ (`morph`): what both render alike stays untouched, typeset
  // math included. Returns how many nodes changed.
  function settleTail(tail, final) {
    clearTimeout(tail.__timer); // the trailing render (markdown.js): the server's render is the one to show now
    tail.__timer = null;
    var changed = morphChildren(tail, final);
    if (window.ChatMarkdown) window.ChatMarkdown.typeset(tail);
    return changed;
  }

  // Makes `node` (on the page) read as `wanted` (parsed from the final HTML), keeping every node that already does:
  // an element with the same name and attributes stays and only its children are compared; text changes in place.
  // Math typeset on the page (its TeX kept in data-tex) counts as its TeX. Returns how many nodes changed.
  function morph(node, wanted) {
    if (node.isEqualNode(wanted)) return 0;
    if (node.nodeType === 3 && wanted.nodeType === 3) {
      node.nodeValue = wanted.nodeValue;
      return 1;
    }
    if (node.nodeType !== 1 || wanted.nodeType !== 1 || node.nodeName !== wanted.nodeName) {
      node.parentNode.replaceChild(wanted, node);
      return 1;
    }
    if (node.hasAttribute("data-tex") && !wanted.hasAttribute("data-tex")) {
      if (node.getAttribute("data-tex") === wanted.textContent && node.className === wanted.className) return 0;
      node.parentNode.replaceChild(wanted, node);
      return 1;
    }
    var changed = sameAttributes(node, wanted) ? 0 : 1;
    if (changed) {
      Array.from(node.attributes).forEach(function (a) { if (!wanted.hasAttribute(a.name)) node.removeAttribute(a.name); });
      Array.from(wanted.attributes).forEach(function (a) { node.setAttribute(a.name, a.value); });
    }
    return changed + morphChildren(node, wanted);
  }

  function morphChildren(node, wanted) {
    var changed = 0;
    var have = Array.from(node.childNodes);
    var want = Array.from(wanted.childNodes);
    want.forEach(function (child, index) {
      if (index < have.length) changed += morph(have[index], child);
      else {
        node.appendChild(child);
        changed += 1;
      }
    });
    have.slice(want.length).forEach(function (child) {
      child.remove();
      changed += 1;
    });
    return changed;
  }

  function sameAttributes(a, b) {
    if (a.attributes.length !== b.attributes.length) return false;
    return Array.from(a.attributes).every(function (attribute) { return b.getAttribute(attribute.name) === attribute.value; });
  }

  // The end of an answer (its `done` or `error` event; `state`: stream.js's, what the page showed of it). With the
  // final render (`html`): patched into the article in place when the blocks shown are its prefix (apply). Without it
  // (a complete answer this page showed every delta of): finished from its last words and data (articles.js). The
  // result of either, null when there is nothing to put in place, or false when the page cannot finish it without
  // the saved article.
  function end(article, data, state) {
    if (typeof data.html === "string") return apply(article, data.html, state.html);
    var done = data.meta && state.seq === data.seq && window.ChatArticles ? window.ChatArticles.finish(article, data) : null;
    return done || false;
  }

  window.ChatFinal = { apply: apply, end: end, settleLast: settleLast };
})();
