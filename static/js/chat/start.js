// The start page's first message, in place: the server answers the create with the new conversation's page
// (asked for with X-Chat-Start), and this file takes its parts (toolbar, panel, composer, thread) into the page,
// pushes the conversation's address with history.pushState and starts the websocket; the answer streams on,
// nothing reloads. Back goes to the start page again.
(function () {
  "use strict";

  var thread = document.getElementById("thread");
  if (!thread || thread.dataset.conversation) return;

  document.addEventListener("htmx:configRequest", function (event) {
    var elt = event.detail.elt;
    if (elt && elt.matches && elt.matches("#composer, .walkthrough-start")) event.detail.headers["X-Chat-Start"] = "in-place";
  });

  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    var url = xhr && xhr.getResponseHeader("X-Chat-Created");
    if (!url) return;
    event.detail.shouldSwap = false;
    become(new DOMParser().parseFromString(xhr.responseText, "text/html"), url);
  });

  function take(selector, page) {
    var old = document.querySelector(selector);
    var fresh = page.querySelector(selector);
    if (!old || !fresh) return null;
    old.replaceWith(fresh);
    if (window.htmx) window.htmx.process(fresh);
    return fresh;
  }

  function become(page, url) {
    var fresh = page.getElementById("thread");
    if (!fresh || !fresh.dataset.conversation) { location.assign(url); return; }
    history.pushState({ conversation: fresh.dataset.conversation }, "", url);
    window.addEventListener("popstate", function () { location.reload(); });
    document.title = page.title;
    take(".chat-toolbar", page);
    take("#chat-panel", page);
    var composer = take("#composer", page);
    // The message is sent: what waited for it (its attachments, the request preview) starts over, as after any
    // send (composer.js's own `sent` does not run: this answer was not swapped into the thread).
    (composer || document).dispatchEvent(new CustomEvent("chat:sent", { bubbles: true }));
    // What only a conversation's page has: the connection banner, the compare form, the branch forms.
    var banner = page.getElementById("connection-banner");
    if (banner && !document.getElementById("connection-banner")) thread.parentNode.insertBefore(banner, thread);
    var main = thread.closest(".chat-main");
    ["compare-setup", "branch-form-edit", "branch-form-insert"].forEach(function (id) {
      var part = page.getElementById(id);
      if (part && !document.getElementById(id) && main) {
        main.appendChild(part);
        if (window.htmx) window.htmx.process(part);
      }
    });
    // The prototypes of the articles the page builds (articles.js): the start page has none.
    var prototypes = page.getElementById("message-prototypes");
    var old = document.getElementById("message-prototypes");
    if (old) old.remove();
    if (prototypes) thread.parentNode.insertBefore(prototypes, thread.nextSibling);
    thread.dataset.conversation = fresh.dataset.conversation;
    thread.dataset.wsUrl = fresh.dataset.wsUrl;
    document.getElementById("message-list").innerHTML = page.getElementById("message-list").innerHTML;
    if (window.ChatClient) window.ChatClient.start();
    if (window.htmx) window.htmx.trigger(document.body, "conversation-changed", { id: Number(fresh.dataset.conversation) });
    var input = document.getElementById("composer-input");
    if (input) input.focus({ preventScroll: true });
  }
})();
