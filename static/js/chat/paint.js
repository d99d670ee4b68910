// Writes a streaming answer's changes into its article, for stream.js (which batches them into animation frames):
// the finished blocks, the live tail, the reasoning, the other choices, and the badge of an answer waiting for a
// slot. The final render is final.js's.
(function () {
  "use strict";

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

  window.ChatPaint = { apply: apply, slotWait: slotWait };
})();
