// Live markdown: the unfinished tail of a streaming answer rendered in the browser, and math typeset by KaTeX.
//
// The server renders every finished block (playground/lib/markdown/rendering.py) and, when the answer ends, the whole
// answer, which replaces this live render. Until then the tail goes through the same rules here: markdown-it
// with raw HTML off (CommonMark + tables + strikethrough), code blocks and remote-image placeholders built the
// same way, math as in playground/chat/math.py, then DOMPurify held to the server's allow-list (tags,
// attributes per tag, classes per tag, URL schemes). Code in the tail is not highlighted: the server's Pygments
// render of the block replaces it a moment later. Math is typeset by KaTeX with `trust` off (no \href, \url or
// \html…), and its output is sanitized again before it enters the page.
(function () {
  "use strict";

  // The tail is re-rendered as it changes, less often the more a render costs (renderTail); a long one, or one whose
  // renders stay slow, shows as text until its block is finished (the server's render of the block then replaces
  // it), so a frame stays well under 50 ms.
  var TAIL_LIMIT = 6000;
  var SLOW_MS = 24;
  var LANGUAGE = /^[\w#+.-]{1,32}$/;
  var DATA_IMAGE = /^data:image\/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*$/i;
  var MAX_MATH = 4000;

  // markdown-it and DOMPurify are loaded after the page (nothing of the first paint needs them), KaTeX when the
  // first math shows up: their addresses are on this script's tag. window.ChatMarkdown exists once they are in.
  var script = document.currentScript;
  var md = null;
  var purify = null;
  var mathPurify = null;
  function escapeHtml(text) { return md.utils.escapeHtml(text); }

  // ---------------------------------------------------------------- render rules (as rendering.py)

  function codeBlock(code, language) {
    var label = language ? escapeHtml(language) : "text";
    var codeClass = language ? ' class="language-' + escapeHtml(language) + '"' : "";
    return '<div class="code-block"><div class="code-head"><span class="code-lang">' + label + "</span>" +
      '<button type="button" class="copy-button" data-copy-code="">Copy</button></div>' +
      '<pre tabindex="0"><code' + codeClass + ">" + escapeHtml(code) + "</code></pre></div>\n";
  }

  function hostOf(url) {
    try { return new URL(url).host; } catch (e) { return ""; }
  }

  function schemeOf(url) {
    var match = /^([a-z][a-z0-9+.-]*):/i.exec(url.trim());
    return match ? match[1].toLowerCase() : "";
  }

  function setupMarkdown() {
    md = window.markdownit("commonmark", { html: false, linkify: false }).enable(["table", "strikethrough"]);
    md.renderer.rules.fence = function (tokens, idx) {
      var info = tokens[idx].info.trim().split(/\s+/);
      var language = info[0] && LANGUAGE.test(info[0]) ? info[0] : "";
      return codeBlock(tokens[idx].content, language);
    };
    md.renderer.rules.code_block = function (tokens, idx) { return codeBlock(tokens[idx].content, ""); };
    md.renderer.rules.image = function (tokens, idx, options, env, self) {
      var token = tokens[idx];
      var src = token.attrGet("src") || "";
      var alt = self.renderInlineAsText(token.children || [], options, env);
      if (DATA_IMAGE.test(src)) return '<img src="' + escapeHtml(src) + '" alt="' + escapeHtml(alt) + '">';
      var scheme = schemeOf(src);
      if (scheme !== "http" && scheme !== "https") return escapeHtml(alt);
      var label = alt ? "Load image: " + alt : "Load image";
      return '<button type="button" class="image-placeholder" data-src="' + escapeHtml(src) + '" title="' + escapeHtml(src) + '">' +
        escapeHtml(label) + ' <span class="image-host">(' + escapeHtml(hostOf(src)) + ")</span></button>";
    };
    md.use(mathPlugin);
  }

  // ---------------------------------------------------------------- math rules (as math.py)

  function closing(src, pos, end, delimiter) {
    while (pos < end) {
      if (src[pos] === "\\") { pos += 2; continue; }
      if (src.startsWith(delimiter, pos)) return pos;
      pos += 1;
    }
    return -1;
  }

  function mathInline(state, silent) {
    var src = state.src, pos = state.pos, end = state.posMax, close, content, token;
    if (src[pos] !== "$") return false;
    if (src.startsWith("$$", pos)) {
      close = closing(src, pos + 2, end, "$$");
      content = close >= 0 ? src.slice(pos + 2, close) : "";
      if (close < 0 || !content.trim() || content.length > MAX_MATH) return false;
      if (!silent) {
        token = state.push("math_inline_display", "span", 0);
        token.content = content.trim();
      }
      state.pos = close + 2;
      return true;
    }
    if (pos + 1 >= end || " \t\n".indexOf(src[pos + 1]) >= 0) return false;
    close = closing(src, pos + 1, end, "$");
    if (close < 0 || " \t\n".indexOf(src[close - 1]) >= 0 || (close + 1 < end && /\d/.test(src[close + 1]))) return false;
    content = src.slice(pos + 1, close);
    if (content.length > MAX_MATH) return false;
    if (!silent) {
      token = state.push("math_inline", "span", 0);
      token.content = content;
    }
    state.pos = close + 1;
    return true;
  }

  function rstrip(text) { return text.replace(/\s+$/, ""); }

  function mathBlock(state, startLine, endLine, silent) {
    var begin = state.bMarks[startLine] + state.tShift[startLine];
    if (state.sCount[startLine] - state.blkIndent >= 4 || !state.src.startsWith("$$", begin)) return false;
    var first = rstrip(state.src.slice(begin + 2, state.eMarks[startLine]));
    var line = startLine, content;
    if (first.endsWith("$$")) {
      content = first.slice(0, -2);
    } else {
      var parts = [first];
      for (;;) {
        line += 1;
        if (line >= endLine) return false;
        var text = rstrip(state.src.slice(state.bMarks[line] + state.tShift[line], state.eMarks[line]));
        if (!text) return false;
        if (text.endsWith("$$")) { parts.push(text.slice(0, -2)); break; }
        parts.push(text);
      }
      content = parts.join("\n");
    }
    if (!content.trim() || content.length > MAX_MATH) return false;
    if (silent) return true;
    state.line = line + 1;
    var token = state.push("math_block", "div", 0);
    token.block = true;
    token.content = content.trim();
    token.map = [startLine, state.line];
    return true;
  }

  function mathPlugin(instance) {
    instance.inline.ruler.before("escape", "math_inline", mathInline);
    instance.block.ruler.before("fence", "math_block", mathBlock, { alt: ["paragraph", "reference", "blockquote", "list"] });
    instance.renderer.rules.math_inline = function (tokens, idx) {
      return '<span class="math math-inline">' + escapeHtml(tokens[idx].content) + "</span>";
    };
    instance.renderer.rules.math_inline_display = function (tokens, idx) {
      return '<span class="math math-display">' + escapeHtml(tokens[idx].content) + "</span>";
    };
    instance.renderer.rules.math_block = function (tokens, idx) {
      return '<div class="math math-display">' + escapeHtml(tokens[idx].content) + "</div>\n";
    };
  }

  // ---------------------------------------------------------------- sanitizing (as rendering.py's nh3 cleaner)

  var TAGS = ["p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "s", "del", "code", "pre",
    "blockquote", "ul", "ol", "li", "a", "img", "table", "thead", "tbody", "tr", "th", "td", "span", "div", "button"];
  var ATTRIBUTES = {
    a: ["href", "title"], img: ["src", "alt", "title"], code: ["class"], ol: ["start"], th: ["style"], td: ["style"], pre: ["tabindex"],
    button: ["type", "data-src", "data-copy-code", "title", "class"], span: ["class"], div: ["class"],
  };
  var CLASSES = {
    span: /^(?:tok-[\w-]+|code-lang|image-host|math|math-inline|math-display)$/,
    div: /^(?:code-block|code-head|math|math-display)$/,
    button: /^(?:copy-button|image-placeholder)$/,
    code: /^language-[\w#+.-]{1,32}$/,
  };

  function allowedValue(tag, name, value) {
    if (name === "class") {
      var pattern = CLASSES[tag];
      if (!pattern) return null;
      var kept = value.split(/\s+/).filter(function (word) { return word && pattern.test(word); });
      return kept.length ? kept.join(" ") : null;
    }
    if (tag === "a" && name === "href") return ["http", "https", "mailto"].indexOf(schemeOf(value)) >= 0 ? value : null;
    if (tag === "img" && name === "src") return DATA_IMAGE.test(value) ? value : null;
    if (tag === "button" && name === "data-src") return ["http", "https"].indexOf(schemeOf(value)) >= 0 ? value : null;
    if (name === "tabindex") return tag === "pre" ? "0" : null;
    if (name === "style") {
      var align = /^\s*text-align\s*:\s*(left|right|center)\s*;?\s*$/i.exec(value);
      return align ? "text-align:" + align[1].toLowerCase() : null;
    }
    return value;
  }

  function setupPurify() {
    purify = window.DOMPurify(window);
    mathPurify = window.DOMPurify(window);
    purify.addHook("uponSanitizeAttribute", function (node, data) {
      var tag = node.nodeName.toLowerCase();
      var allowed = ATTRIBUTES[tag] || [];
      if (allowed.indexOf(data.attrName) < 0) { data.keepAttr = false; return; }
      var value = allowedValue(tag, data.attrName, data.attrValue);
      if (value === null) { data.keepAttr = false; return; }
      data.attrValue = value;
      data.forceKeepAttr = true;
    });
    purify.addHook("afterSanitizeAttributes", function (node) {
      if (node.nodeName === "A") {
        node.setAttribute("rel", "noopener noreferrer nofollow");
        node.setAttribute("target", "_blank");
      }
    });
  }

  var CONFIG = {
    ALLOWED_TAGS: TAGS,
    ALLOWED_ATTR: ["href", "title", "src", "alt", "class", "start", "style", "type", "data-src", "data-copy-code"],
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|data:image\/(?:png|jpeg|gif|webp);base64,)/i,
    FORBID_CONTENTS: ["script", "style"],
  };

  function sanitize(html) {
    return purify.sanitize(html, CONFIG);
  }

  // Markdown text as sanitized HTML, as the server would render it (without code highlighting).
  function render(text) {
    if (!md || !purify || !text) return "";
    return sanitize(md.render(text));
  }

  // ---------------------------------------------------------------- math

  var mathCache = new Map(); // "d|" or "i|" + TeX -> sanitized KaTeX HTML; the tail re-renders every frame
  // Unsupported commands show in the theme's danger colour (KaTeX's own red is unreadable on the dark theme).
  var MATH_OPTIONS = { throwOnError: false, trust: false, strict: "ignore", maxSize: 20, maxExpand: 1000, output: "htmlAndMathml", errorColor: "var(--danger)" };

  function mathHTML(tex, display) {
    var key = (display ? "d|" : "i|") + tex;
    var html = mathCache.get(key);
    if (html === undefined) {
      try {
        html = window.katex.renderToString(tex, Object.assign({ displayMode: display }, MATH_OPTIONS));
      } catch (e) {
        html = escapeHtml(tex);
      }
      html = mathPurify.sanitize(html, { USE_PROFILES: { html: true, mathMl: true }, ALLOW_DATA_ATTR: false });
      if (mathCache.size > 500) mathCache.clear();
      mathCache.set(key, html);
    }
    return html;
  }

  // Typesets the math of `root` not typeset yet (its TeX stays in data-tex, for copying).
  function typeset(root) {
    if (!mathPurify || !root || !root.querySelectorAll) return;
    var nodes = root.querySelectorAll(".math:not([data-tex])");
    if (!nodes.length) return;
    if (!window.katex) {
      loadKatex();
      return;
    }
    nodes.forEach(function (node) {
      var tex = node.textContent;
      node.setAttribute("data-tex", tex);
      node.innerHTML = mathHTML(tex, node.classList.contains("math-display"));
    });
  }

  // The unfinished tail of a streaming answer, rendered; as plain text when it is too long or a library is missing.
  // It is parsed at most every RENDER_EVERY ms, or every ten times its last render's cost when that is longer (at
  // most a tenth of the main thread for a busy or slow machine): in between, new text is appended as text to the
  // last element rendered (one cheap text node), and a trailing render follows, so the tail is never left
  // unformatted. Two renders in a row over SLOW_MS (not one: a garbage collection or a busy core is not the text's
  // fault) leave the rest of the block as text.
  var RENDER_EVERY = 100;

  function renderTail(element, text) {
    var before = element.__text || "";
    if (before === text) return;
    element.__text = text;
    // A new block began (the tail is not a continuation of the last one): it may render live again.
    if (text.slice(0, 64) !== before.slice(0, 64)) element.__slowAt = Infinity;
    var limit = Math.min(TAIL_LIMIT, element.__slowAt || Infinity);
    if (!text || !md || !purify || text.length > limit) {
      clearTimeout(element.__timer);
      element.__timer = null;
      element.classList.remove("tail-live");
      element.textContent = text || "";
      return;
    }
    var since = performance.now() - (element.__renderedAt || 0);
    var every = Math.max(RENDER_EVERY, 10 * (element.__cost || 0));
    if (since < every && before && text.indexOf(before) === 0 && element.classList.contains("tail-live")) {
      appendText(element, text.slice(before.length));
      if (!element.__timer) {
        element.__timer = setTimeout(function () {
          element.__timer = null;
          if (element.isConnected && element.__text) renderNow(element, element.__text);
        }, every - since);
      }
      return;
    }
    renderNow(element, text);
  }

  function renderNow(element, text) {
    var started = performance.now();
    element.classList.add("tail-live");
    element.innerHTML = render(text);
    typeset(element);
    element.__renderedAt = performance.now();
    var cost = element.__renderedAt - started;
    if (cost > SLOW_MS && element.__cost > SLOW_MS) element.__slowAt = text.length;
    element.__cost = cost;
  }

  // New text between two renders goes at the very end of the open block (the last paragraph, item, cell or code
  // block), never into an inline element: a rendered <strong> or <a> is closed, and text after it is not in it.
  var OPEN_BLOCK = /^(P|LI|UL|OL|BLOCKQUOTE|PRE|H[1-6]|TABLE|THEAD|TBODY|TR|TD|TH|DIV)$/;

  function appendText(element, text) {
    var target = element;
    for (;;) {
      var last = target.lastChild;
      // The renderer's line breaks between blocks are not where the text goes.
      while (last && last.nodeType === 3 && !last.nodeValue.trim() && last.previousSibling) last = last.previousSibling;
      if (!last || last.nodeType !== 1) break;
      if (!OPEN_BLOCK.test(last.tagName) && !(last.tagName === "CODE" && target.tagName === "PRE")) break;
      target = last;
    }
    target.appendChild(document.createTextNode(text));
  }

  // Finished blocks from the server, as a fragment with its math typeset, ready to append.
  function fragment(html) {
    var template = document.createElement("template");
    template.innerHTML = html;
    typeset(template.content);
    return template.content;
  }

  document.addEventListener("chat:message", function (event) { typeset(event.target); });

  // ---------------------------------------------------------------- loading

  function load(src) {
    return new Promise(function (resolve, reject) {
      var tag = document.createElement("script");
      tag.src = src;
      tag.async = true;
      tag.onload = resolve;
      tag.onerror = reject;
      document.head.appendChild(tag);
    });
  }

  var katexLoading = null;

  function loadKatex() {
    if (katexLoading || !script || !script.dataset.katex) return;
    var style = document.createElement("link");
    style.rel = "stylesheet";
    style.href = script.dataset.katexCss;
    document.head.appendChild(style);
    katexLoading = load(script.dataset.katex).then(function () { typeset(document.body); });
  }

  function ready() {
    setupMarkdown();
    setupPurify();
    window.ChatMarkdown = { render: render, sanitize: sanitize, renderTail: renderTail, typeset: typeset, fragment: fragment };
    typeset(document.body);
    // The first render compiles markdown-it's rules and sets up DOMPurify (~100 ms): pay it while the page is
    // idle, not in the first frame of a stream.
    var warm = function () { render("*warm* **up** `x`\n\n- a\n\n| a |\n|---|\n| b |\n\n```\nc\n```"); };
    if (window.requestIdleCallback) window.requestIdleCallback(warm, { timeout: 2000 });
    else setTimeout(warm, 200);
  }

  function start() {
    if (window.markdownit && window.DOMPurify) { ready(); return; }
    Promise.all([load(script.dataset.markdownIt), load(script.dataset.purify)]).then(ready);
  }

  if (window.markdownit && window.DOMPurify) ready();
  else if (document.readyState === "complete") start();
  else window.addEventListener("load", start);
})();
