// The chat page's websocket: connecting, the heartbeat, reconnecting with backoff, and actions over it.
//
// stream.js renders what it hears: it registers its callbacks (window.ChatSocket.register) before it connects. This
// file tells the behaviours through events: chat:connection ({state: "lost", retryIn, offline} or {state: "open"})
// when the websocket drops or comes back, and chat:state when the actions in flight change.
//
// A socket can stay open for a long time after the network is gone: the browser's offline event and a heartbeat
// (a ping every HEARTBEAT ms, answered by a pong; nothing heard for SILENCE ms after it) drop it at once.
(function () {
  "use strict";

  var thread = document.getElementById("thread");
  if (!thread) return;

  // stream.js's callbacks: receive(data) for what the server sends, resubscribe() once a socket is open, closed()
  // when it is gone, replied(data, callback) for the reply to an action, lost() when replies will not come.
  var renderer = null;
  var socket = null;
  var backoff = 500;
  var RECONNECT = 4012; // the close code of a server process that is restarting (playground/lib/drain.py)
  var handedOver = false;
  var actions = {}; // action id -> callback awaiting the server's reply (see "actions over the websocket")
  var actionCount = 0;

  function emit(target, name, detail) {
    target.dispatchEvent(new CustomEvent(name, { bubbles: true, detail: detail || {} }));
  }

  // ---------------------------------------------------------------- websocket

  var retryTimer = null;
  var lost = false;
  var HEARTBEAT = 10000;
  var SILENCE = 4000;
  var heartbeat = null;
  var heard = 0;

  function beat(ws) {
    clearInterval(heartbeat);
    heartbeat = setInterval(function () {
      if (socket !== ws) return;
      var asked = Date.now();
      sendJSON({ type: "ping" });
      setTimeout(function () {
        if (socket === ws && heard < asked) dropDead(ws, false);
      }, SILENCE);
    }, HEARTBEAT);
  }

  // The socket is as good as closed: stop listening to it and go through the close at once.
  function dropDead(ws, offline) {
    ws.onmessage = null;
    ws.onclose = null;
    try { ws.close(); } catch (e) { /* already closing */ }
    closed(ws, 1006, offline);
  }

  window.addEventListener("offline", function () {
    if (socket) dropDead(socket, true);
    else if (lost) emit(document, "chat:connection", { state: "lost", retryIn: 0, offline: true });
  });
  window.addEventListener("online", function () { reconnectNow(); });

  function connect() {
    if (!thread.dataset.wsUrl) return;
    clearTimeout(retryTimer);
    retryTimer = null;
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var ws = new WebSocket(scheme + location.host + thread.dataset.wsUrl);
    ws.onopen = function () {
      socket = ws;
      backoff = 500;
      // A handover counts as done once the new socket has stayed open a moment (a restarting process closes a new
      // one at once: that takes the backoff).
      setTimeout(function () { if (socket === ws) handedOver = false; }, 2000);
      heard = Date.now();
      beat(ws);
      // Every message shown as streaming asks for its snapshot: a running one resumes, a gone one ends.
      renderer.resubscribe();
      if (lost) emit(document, "chat:connection", { state: "open" });
      lost = false;
    };
    ws.onmessage = function (event) {
      var data;
      heard = Date.now();
      try { data = JSON.parse(event.data); } catch (e) { return; }
      if (data.type === "pong") return;
      if (data.id && actions[data.id]) { answered(data); return; }
      renderer.receive(data);
    };
    ws.onclose = function (event) { closed(ws, event.code, !navigator.onLine); };
  }

  function closed(ws, code, offline) {
    if (socket === ws) socket = null;
    clearInterval(heartbeat);
    abandon();
    renderer.closed();
    if (code === 4403 || code === 4404) return;
    if (code === RECONNECT && !handedOver) {
      // The server is restarting (drain.py): come back at once, through the balancer to another process, and
      // follow the answers still streaming as a second tab does. Quietly: no banner for a handover. Once only:
      // if the new socket is refused again, the usual backoff (and banner) follows.
      handedOver = true;
      clearTimeout(retryTimer);
      retryTimer = setTimeout(connect, Math.round(100 + Math.random() * 200));
      return;
    }
    // Backoff with jitter, so that the tabs of a restarted server do not all come back at once.
    var delay = Math.round(backoff * (0.8 + Math.random() * 0.4));
    lost = true;
    emit(document, "chat:connection", { state: "lost", retryIn: delay, offline: offline });
    clearTimeout(retryTimer);
    retryTimer = setTimeout(connect, delay);
    backoff = Math.min(backoff * 2, 8000);
  }

  function reconnectNow() {
    if (socket || !retryTimer) return;
    backoff = 500;
    connect();
  }

  function sendJSON(data) {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify(data));
      return true;
    }
    return false;
  }

  // ---------------------------------------------------------------- actions over the websocket
  //
  // request({action: "send", ...fields}, callback): the frame goes with an id of this tab's making; the reply
  // carries it back. `sent` names or holds the new articles (so no subscription is needed); deltas of a send or
  // retry that came before it are named by the action's id (stream.js).
  // The callback gets the reply (`sent`, `invalid`, `failed`, `refused`, or `lost`
  // when the socket closed first). Returns the action's id, or false when the socket is not open (the caller falls
  // back to the form POST).

  function request(frame, callback) {
    if (!socket || socket.readyState !== WebSocket.OPEN) return false;
    actionCount += 1;
    var id = "a" + Date.now().toString(36) + "-" + actionCount + "-" + Math.random().toString(36).slice(2, 8);
    actions[id] = callback || function () {};
    if (!sendJSON(Object.assign({}, frame, { id: id }))) {
      delete actions[id];
      return false;
    }
    emit(document, "chat:state");
    return id;
  }

  function answered(data) {
    var callback = actions[data.id];
    delete actions[data.id];
    // This socket's process is restarting (drain.py): leave it now, so that what the callback sends again takes
    // the form POST (through the balancer, to another process) and the socket comes back elsewhere.
    if (data.type === "failed" && data.problem === "draining" && socket) {
      var ws = socket;
      ws.onmessage = null;
      ws.onclose = null;
      try { ws.close(); } catch (e) { /* already closing */ }
      closed(ws, RECONNECT, false);
    }
    renderer.replied(data, callback);
  }

  // The socket closed before some replies: those actions may or may not have started; the thread is fetched
  // again once the socket is back.
  function abandon() {
    var ids = Object.keys(actions);
    if (!ids.length) return;
    var callbacks = ids.map(function (id) { var c = actions[id]; delete actions[id]; return c; });
    callbacks.forEach(function (callback) { callback({ type: "lost" }); });
    renderer.lost();
    emit(document, "chat:state");
  }

  window.ChatSocket = {
    // stream.js's callbacks (see `renderer` above), given before the first connect.
    register: function (callbacks) { renderer = callbacks; },
    connect: connect,
    // Skips the wait of the backoff (the connection banner's button).
    reconnect: reconnectNow,
    // A frame for the consumer (stop, subscribe); false when the socket is not open.
    send: sendJSON,
    request: request,
    // Actions sent and not answered yet.
    pending: function () { return Object.keys(actions).length > 0; },
    // Drops the websocket as a network failure would (it reconnects and resubscribes); for tests and demos.
    drop: function () { if (socket) socket.close(); },
    connected: function () { return socket !== null; },
  };
})();
