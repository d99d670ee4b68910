// A streaming answer's changes, for stream.js (which batches them into animation frames): gathered from its events
// into a queue (take), then written into its article (apply): the finished blocks, the live tail, the reasoning, the
// other choices, and the badge of an answer waiting for a slot. The final render is final.js's.
(function () {
  "use strict";

  function emptyQueue() {
    return { snapshot: null, blocks: [], tail: null, reasoning: [], choices: null, final: null };
  }

  // A snapshot, delta, done or error event into the message's state ({seq, ready, html, queue}, stream.js); false
  // when it changes nothing (another kind, or a delta the state already has).
  function take(state, data) {
    var queue = state.queue;
    if (data.type === "snapshot") {
      state.ready = true;
      state.seq = data.seq;
      state.html = data.blocks.join("");
      queue.snapshot = data;
      queue.blocks = [];
      queue.tail = null;
      queue.reasoning = [];
      queue.choices = null;
    } else if (data.type === "delta") {
      // Before its snapshot, a message's deltas are already part of what the snapshot will bring.
      if (!state.ready || data.seq <= state.seq) return false;
      state.seq = data.seq;
      if (data.blocks && data.blocks.length) {
        Array.prototype.push.apply(queue.blocks, data.blocks);
        state.html += data.blocks.join("");
      }
      if (typeof data.tail === "string") queue.tail = data.tail;
      if (data.reasoning) queue.reasoning.push(data.reasoning);
      if (data.choices) queue.choices = window.ChatChoices.merge(queue.choices, data.choices);
    } else if (data.type === "done" || data.type === "error") {
      queue.final = data;
    } else {
      return false;
    }
    return true;
  }

  // A message's changes since the last frame (stream.js's queue: a snapshot, then the blocks, the tail, the
  // reasoning and the other choices the deltas after it brought) written into its article.
  function apply(article, queue) {
    var body = article.querySelector(".message-body");
    var blocks = body && body.querySelector(".blocks");
    var tail = body && body.querySelector(".tail");
    var thinking = article.querySelector(".thinking");
    var thinkingText = thinking && thinking.querySelector(".thinking-text");
    if (queue.snapshot) {
      if (blocks) {
        blocks.textContent = "";
        appendBlocks(blocks, queue.snapshot.blocks.join(""));
      }
      if (tail) setTail(tail, queue.snapshot.tail || "");
      if (thinkingText) thinkingText.textContent = queue.snapshot.reasoning || "";
    }
    if (blocks && queue.blocks.length) appendBlocks(blocks, queue.blocks.join(""));
    if (tail && queue.tail !== null) setTail(tail, queue.tail);
    if (thinkingText && queue.reasoning.length) thinkingText.appendChild(document.createTextNode(queue.reasoning.join("")));
    if (thinking && thinkingText && thinking.hidden && thinkingText.firstChild) thinking.hidden = false;
    if (window.ChatChoices && (queue.choices || (queue.snapshot && queue.snapshot.choices))) {
      window.ChatChoices.update(article, queue.snapshot ? queue.snapshot.choices || [] : null, queue.choices);
    }
    var waiting = article.querySelector(".waiting");
    if (waiting && ((blocks && blocks.firstChild) || (tail && tail.firstChild) || (thinkingText && thinkingText.firstChild))) {
      waiting.hidden = true;
    }
  }

  // Finished blocks arrive as sanitized HTML; the tail as markdown text, rendered live (markdown.js).
  function appendBlocks(blocks, html) {
    if (window.ChatMarkdown) blocks.appendChild(window.ChatMarkdown.fragment(html));
    else blocks.insertAdjacentHTML("beforeend", html);
  }

  function setTail(tail, text) {
    if (window.ChatMarkdown) window.ChatMarkdown.renderTail(tail, text);
    else tail.textContent = text;
  }

  // Every slot of the connection is taken (connections/gate.py): the badge says so until the answer starts.
  function slotWait(article, data) {
    var badge = article.querySelector(".message-live");
    if (!badge || !badge.firstChild) return;
    if (data.type === "waiting") {
      badge.dataset.waiting = badge.dataset.waiting || badge.firstChild.textContent;
      badge.firstChild.textContent = data.text;
    } else if (badge.dataset.waiting) {
      badge.firstChild.textContent = badge.dataset.waiting;
      delete badge.dataset.waiting;
    }
  }

  window.ChatPaint = { emptyQueue: emptyQueue, take: take, apply: apply, slotWait: slotWait };
})();
