// The articles the page builds itself, from the prototypes the server rendered into it (chat/prototypes.py: the
// same template as every article, for a stand-in message whose id is ID): a new turn's question and answer
// placeholder as a send leaves (named by its `sent` reply) or from the data of a `start` event, so a send over the
// socket costs no render on the way to the first delta; and the finished parts of an answer the page watched to
// its end (copy button, actions, footer) from its `done` event, so the end costs no render of the article and no
// swap of its body. Used by the stream renderer (stream.js).
(function () {
  "use strict";

  var ID = "9007199254740";

  // A copy of a prototype's article, its stand-in id replaced by `id` (in its ids, its addresses); null when the
  // page has none (the start page).
  function prototype(name, id) {
    var html = prototypes()[name];
    if (typeof html !== "string") return null;
    var template = document.createElement("template");
    template.innerHTML = html.split(ID).join(String(Number(id)));
    return template.content.querySelector("article");
  }

  // {question, placeholder, finished}: their HTML, from the page's JSON script (read once per script element).
  var holder = null;
  var parsed = {};
  function prototypes() {
    var script = document.getElementById("message-prototypes");
    if (script !== holder) {
      holder = script;
      try { parsed = script ? JSON.parse(script.textContent) : {}; } catch (e) { parsed = {}; }
    }
    return parsed;
  }

  // [question, answer placeholder] of a new turn ({question: {id, content, root}, answer: {id, model}}), or null.
  function turn(data) {
    var question = prototype("question", data.question.id);
    var answer = prototype("placeholder", data.answer.id);
    if (!question || !answer) return null;
    question.querySelector(".message-body").textContent = data.question.content;
    if (!data.question.root) {
      var above = question.querySelector('[data-branch-form="insert"][data-after=""]');
      if (above) above.remove();
    }
    var model = answer.querySelector(".message-model");
    if (model && data.answer.model) model.textContent = data.answer.model;
    else if (model) model.remove();
    return [question, answer];
  }

  // A send's question and answer placeholder as it leaves (its action id, its frame), before the rows exist: put in
  // the thread by stream.js, inert (`data-foreseen`: no behaviours, not counted as streaming) until the `sent` reply
  // names them. Their stand-in ids are above every real one (they go last). Null when the server builds the turn:
  // n > 1 answers (tabs), a comparison in the thread.
  var STAND_IN = { question: 9007199254741, answer: 9007199254742 };
  var foreseen = null; // {id: the action's, articles: [question, answer]}

  function foresee(id, frame, thread) {
    var content = typeof frame.content === "string" ? frame.content.trim() : "";
    var choices = document.querySelector('#settings-form [name="n"]');
    if (foreseen || !content || (choices && Number(choices.value) > 1) || thread.querySelector(".compare-grid")) return null;
    var model = document.querySelector('#settings-form [name="model"]');
    var built = turn({
      question: { id: STAND_IN.question, content: content, root: !thread.querySelector("article[data-message-id]") },
      answer: { id: STAND_IN.answer, model: model ? model.value : "" },
    });
    if (!built) return null;
    built.forEach(function (article) { article.setAttribute("data-foreseen", ""); });
    foreseen = { id: id, articles: built };
    return built;
  }

  // The reply to an action (no id: the socket closed first): the foreseen turn of its send named by the rows (the
  // `sent` reply's `placeholder`: their ids wherever the prototype put one, the question and model as saved), or
  // taken away (a refusal, or a reply that brings the articles as HTML). {from, to (null when taken away),
  // articles} with the answer's stand-in and row ids, or null when the action foresaw nothing.
  function named(reply) {
    if (!foreseen || (reply.id && reply.id !== foreseen.id)) return null;
    var articles = foreseen.articles;
    var data = reply.type === "sent" && reply.placeholder;
    foreseen = null;
    if (!data) {
      articles.forEach(function (article) { article.remove(); });
      return { from: String(STAND_IN.answer), to: null, articles: [] };
    }
    rename(articles[0], STAND_IN.question, data.question.id);
    rename(articles[1], STAND_IN.answer, data.answer.id);
    var body = articles[0].querySelector(".message-body");
    if (body && body.textContent !== data.question.content) body.textContent = data.question.content;
    var model = articles[1].querySelector(".message-model");
    if (model && data.answer.model && model.textContent !== data.answer.model) model.textContent = data.answer.model;
    articles.forEach(function (article) { article.removeAttribute("data-foreseen"); });
    return { from: String(STAND_IN.answer), to: String(data.answer.id), articles: articles };
  }

  function rename(article, from, to) {
    var was = String(from);
    var now = String(Number(to));
    [article].concat(Array.from(article.querySelectorAll("*"))).forEach(function (element) {
      Array.prototype.forEach.call(element.attributes, function (attribute) {
        if (attribute.value.indexOf(was) !== -1) attribute.value = attribute.value.split(was).join(now);
      });
    });
  }

  // The end of a complete answer whose every delta this page showed (`done` with `last` and `meta`, no article):
  // the last words settled into the body (final.js), then what a finished article has around it, from the
  // finished prototype. Returns {article, patched, changed}, or null when the page cannot (the caller then asks
  // for the saved article).
  function finish(article, data) {
    var meta = data.meta;
    var done = meta && prototype("finished", article.dataset.messageId);
    var body = article.querySelector(".message-body");
    if (!done || !body || body.parentNode !== article || !body.querySelector(".blocks") || article.dataset.status !== "streaming") {
      return null;
    }
    var changed = window.ChatFinal.settleLast(body, (data.last || []).join(""));
    article.setAttribute("data-status", data.status);
    article.setAttribute("data-seq", String(data.seq));
    article.removeAttribute("data-stop-url");
    var head = article.querySelector(".message-head");
    var live = head && head.querySelector(".message-live");
    if (live) live.remove();
    var copy = done.querySelector(".message-head .message-copy");
    if (head && copy && meta.copy && !head.querySelector(".message-copy")) head.appendChild(copy);
    var thinking = article.querySelector(".thinking");
    if (thinking) {
      thinking.removeAttribute("open");
      var summary = thinking.querySelector("summary");
      if (summary && meta.reasoning_tokens && !summary.querySelector("span")) {
        var count = document.createElement("span");
        count.className = "muted mono";
        count.textContent = "· " + meta.reasoning_tokens + " tokens";
        summary.append(" ", count);
      }
    }
    var waiting = article.querySelector(".waiting");
    if (waiting) waiting.remove();
    body.hidden = !meta.copy;
    var actions = done.querySelector(".message-actions");
    if (actions) article.appendChild(actions);
    if (meta.footer) article.appendChild(footer(done.querySelector(".message-meta"), meta.footer));
    return { article: article, patched: true, changed: changed || 0 };
  }

  // The prototype's footer with the answer's rows ([term, value, title]) and trace id (chat/meta.py).
  function footer(foot, meta) {
    var list = foot.querySelector(".meta-list");
    list.textContent = "";
    meta.rows.forEach(function (row) {
      var item = document.createElement("div");
      if (row[2]) item.title = row[2];
      var term = document.createElement("dt");
      term.textContent = row[0];
      var value = document.createElement("dd");
      value.textContent = row[1];
      item.append(term, value);
      list.appendChild(item);
    });
    var trace = foot.querySelector(".meta-trace");
    if (trace && meta.trace_id) {
      trace.querySelector("code").textContent = meta.trace_id;
      trace.querySelector("[data-copy]").setAttribute("data-copy", meta.trace_id);
    } else if (trace) {
      trace.remove();
    }
    return foot;
  }

  window.ChatArticles = { turn: turn, foresee: foresee, named: named, finish: finish };
})();
