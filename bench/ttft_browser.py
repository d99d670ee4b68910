"""First token as a person sees it: Send clicked in Chromium to the answer's text on screen, against a direct client.

Run by hand: `.venv/bin/python bench/ttft_browser.py [--runs 30] [--upstream-ttft 50] [--cold 5] [--rate 0]`.
Same two daphne processes as bench/relay.py (the upstream, the local API, and the playground, each on its own
temporary SQLite database). Each measured send is the first turn of a conversation of its own, opened in headless
Chromium (Debian's); then a direct httpx stream asks the upstream the same question: interleaved, so both see the
same load. Every figure is reported against the direct client of the same run.

In the page (clock: `performance.now()`), from the Send button's click:
- placeholder: the new answer's article is in the thread;
- first text: its body holds text; last text: its body holds every word of the answer (as at the end; letters and
  digits compared, so a `**` the live tail shows for a moment before the final render makes it bold is no word);
- "on screen" is the frame that paints a change: a change made in an animation-frame callback is painted at the
  end of that frame, any other change at the next frame (the time of that frame's callbacks);
- finished: the answer's article shows it ended (`data-status` no longer streaming: the "Generating" badge gone, the
  actions and the footer in place), i.e. the end as a person, or a bench that waits for the end, sees it;
- flashes: the whole text was on screen, then less of it (the final render replacing the live one badly);
- arrivals: the send frame leaving the page, the `sent` reply, the first and the last delta and the `done` event on
  the websocket (the socket's share against the page's), and when the first upstream chunk reached the playground's
  generator (the delta's `t`, DEBUG_RELAY_TIMING, moved onto the page's clock by `performance.timeOrigin`).
Direct: from the request to the first and to the last content chunk. (The browser context bypasses the page's
Content-Security-Policy: Playwright's waits evaluate strings, which `script-src 'self'` refuses.)

`--floor`: two more sends a round on a page whose socket Playwright routes (`Floor`): through to the server, and
answered at once by the route with the server's recorded reply; their difference is the server's and upstream's share.
`--cold N`: N loads of a conversation page in a fresh browser context (nothing cached): navigation start to a
usable message box (DOMContentLoaded: the deferred scripts have run, the composer's handlers are in place), the
first contentful paint, and the bytes on the wire (Chrome's encoded lengths, until the load event). The static
files are collected first (`collectstatic`, as `make run` does), so they are served with their gzip copies.
`--warm N [--warm-after S]`: a first load, then N more in the same browser context (the first of them S seconds
later): the requests that still reach the server and their bytes. `--trace PATH`: one cold load under a Chromium
trace, its main thread's work up to DOMContentLoaded summarized by kind (the trace is kept at PATH).
"""

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from relay import KEY, Server, devserver, pct

CHROMIUM = "/usr/bin/chromium"
PROMPT = "write 150 words about rivers"

# Before the page's scripts: the frame of each DOM change, and the websocket's arrivals.
PROBE = """
(function () {
  var native = window.requestAnimationFrame.bind(window);
  var inFrame = 0, pending = [];
  window.requestAnimationFrame = function (callback) {
    return native(function (stamp) { inFrame += 1; try { callback(stamp); } finally { inFrame -= 1; } });
  };
  // record.paint: when the frame that shows the change runs.
  window.__painted = function (record) {
    if (inFrame) { record.paint = performance.now(); return; }
    pending.push(record);
    if (pending.length === 1) native(function () {
      var now = performance.now();
      pending.splice(0).forEach(function (r) { r.paint = now; });
    });
  };
  window.__arrivals = { frame: null, sent: null, generator: null, delta: null, lastDelta: null, done: null };
  var Native = window.WebSocket;
  function Probed(url, protocols) {
    var ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    ws.addEventListener("message", function (event) {
      var head = /"type": ?"(\\w+)"/.exec(event.data.slice(0, 80));
      if (!head) return;
      var now = performance.now();
      if (head[1] === "sent" && window.__arrivals.sent === null) window.__arrivals.sent = now;
      if (head[1] === "delta" && window.__arrivals.delta === null) {
        window.__arrivals.delta = now;
        var t = JSON.parse(event.data).t;  // DEBUG_RELAY_TIMING: its first chunk reached the generator (epoch s)
        if (t) window.__arrivals.generator = t * 1000 - performance.timeOrigin;
      }
      if (head[1] === "delta") window.__arrivals.lastDelta = now;
      if (head[1] === "done" || head[1] === "error") window.__arrivals.done = now;
    });
    return ws;
  }
  var send = Native.prototype.send;
  Native.prototype.send = function (data) {
    if (window.__arrivals.frame === null && /"action": ?"send"/.test(String(data).slice(0, 200))) window.__arrivals.frame = performance.now();
    return send.call(this, data);
  };
  Probed.prototype = Native.prototype;
  ["CONNECTING", "OPEN", "CLOSING", "CLOSED"].forEach(function (k) { Probed[k] = Native[k]; });
  window.WebSocket = Probed;
})();
"""

# Arms the watch of one send: the click, the new answer's article and every change of its text.
WATCH = """() => {
  var t = window.__t = { click: null, placeholder: null, marks: [] };
  window.__arrivals.frame = window.__arrivals.sent = window.__arrivals.generator = window.__arrivals.delta = window.__arrivals.lastDelta = window.__arrivals.done = null;
  var known = new Set(Array.from(document.querySelectorAll('article[data-role="assistant"]')).map(function (a) { return a.id; }));
  document.getElementById("send-button").addEventListener("click", function () { t.click = performance.now(); }, { capture: true, once: true });
  var id = null, element = null, last = null;
  function look() {
    if (!id) {
      document.querySelectorAll('article[data-role="assistant"]').forEach(function (a) { if (!known.has(a.id)) element = a; });
      if (!element) return;
      id = element.id;
      t.placeholder = { at: performance.now() };
      window.__painted(t.placeholder);
    }
    // The placeholder shown as the send leaves is named by its row's id when the reply comes (the same element).
    if (element && element.isConnected) id = element.id;
    else element = document.getElementById(id);
    var article = element;
    var body = article && article.querySelector(".message-body");
    var text = body ? body.textContent.replace(/\\s+/g, " ").trim() : "";
    if (text !== last) {
      last = text;
      var mark = { at: performance.now(), text: text };
      t.marks.push(mark);
      window.__painted(mark);
    }
    var status = article ? article.dataset.status : null;
    if (status && status !== "streaming" && t.status === "streaming") {
      t.finished = { at: performance.now() };
      window.__painted(t.finished);
    }
    t.status = status;
  }
  new MutationObserver(look).observe(document.getElementById("thread"), { childList: true, subtree: true, characterData: true, attributes: true, attributeFilter: ["data-status"] });
}"""


def direct(upstream: httpx.Client, prompt: str) -> tuple[float, float, str]:
    """(ms to the first content chunk, ms to the last, the text) of one direct stream."""
    body = {"model": "local/chat", "messages": [{"role": "user", "content": prompt}], "stream": True}
    first = last = None
    parts = []
    start = time.perf_counter()
    with upstream.stream(
        "POST", "/local/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY}"}
    ) as response:
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = orjson.loads(line[6:])
            text = chunk["choices"][0]["delta"].get("content") if chunk.get("choices") else None
            if text:
                last = time.perf_counter()
                first = first or last
                parts.append(text)
    return (first - start) * 1000, (last - start) * 1000, "".join(parts)


class Floor:
    """The page's websocket routed through Playwright (`page.route_web_socket`), for the floor of the page's own
    share: in `real` mode every message passes (and the server's messages from a send frame to its `done` are
    recorded); in `floor` mode a send frame is not passed on but answered at once with the last recording (its
    action id replaced), as if the server and the upstream took no time. Both modes pay the route's own hops, so
    their difference is the server's and the upstream's share."""

    ID = "__floor_action_id__"

    def __init__(self):
        self.mode = "real"
        self.recording: list[str] | None = None
        self.reply: list[str] = []
        self.asked = None

    def route(self, ws) -> None:
        server = ws.connect_to_server()

        def from_page(message):
            frame = orjson.loads(message) if isinstance(message, str) and message.startswith("{") else {}
            if frame.get("action") == "send":
                if self.mode == "floor":
                    for raw in self.reply:
                        ws.send(raw.replace(self.ID, frame["id"]))
                    return
                self.asked, self.recording = frame.get("id"), []
            server.send(message)

        def from_server(message):
            ws.send(message)
            if self.recording is not None:
                self.recording.append(message)
                if '"type":"done"' in message.replace(" ", "")[:200]:
                    self.reply = [self._token(raw) for raw in self.recording]
                    self.recording = None

        ws.on_message(from_page)
        server.on_message(from_server)

    def _token(self, raw: str) -> str:
        data = orjson.loads(raw)
        for key in ("id", "action"):
            if data.get(key) == self.asked:
                data[key] = self.ID
        return orjson.dumps(data).decode()


def browser_send(page, server: Server, pk: int, prompt: str) -> dict:
    page.bring_to_front()  # with --floor a second page is open: a page behind gets no animation frames
    page.goto(f"{server.url}/c/{pk}/")
    page.wait_for_function("window.ChatClient && window.ChatClient.connected()")
    page.wait_for_timeout(400)  # idle: the live markdown warms up (markdown.js)
    page.fill("#composer-input", prompt)
    page.evaluate(WATCH)
    page.click("#send-button")
    page.wait_for_function("window.__t.status && window.__t.status !== 'streaming'", timeout=30_000)
    page.wait_for_timeout(150)  # the final render's frame
    data = page.evaluate("({t: window.__t, arrivals: window.__arrivals})")
    t, marks = data["t"], data["t"]["marks"]
    click = t["click"]
    # Words only: the live tail may show a marker (`**`) for a moment that the final render turns into bold.
    words = [re.sub(r"[\W_]+", "", m["text"]) for m in marks]
    final = words[-1] if marks else ""
    texts = [m for m in marks if m["text"]]
    whole = next((i for i, w in enumerate(words) if w == final), None)
    flashes = sum(1 for w in words[whole:] if len(w) < len(final)) if whole is not None else 0
    whole = marks[whole] if whole is not None else None
    arrivals = data["arrivals"]
    return {
        "placeholder": t["placeholder"]["paint"] - click,
        "first": texts[0]["paint"] - click if texts else None,
        "last": whole["paint"] - click if whole else None,
        "finished": t["finished"]["paint"] - click if t.get("finished") else None,
        "frame": arrivals["frame"] - click if arrivals["frame"] else None,
        "sent_arrival": arrivals["sent"] - click if arrivals["sent"] else None,
        "generator": arrivals["generator"] - click if arrivals["generator"] else None,
        "first_arrival": arrivals["delta"] - click if arrivals["delta"] else None,
        "last_arrival": arrivals["lastDelta"] - click if arrivals["lastDelta"] else None,
        "done_arrival": arrivals["done"] - click if arrivals["done"] else None,
        "flashes": flashes,
        "chars": len(final),
    }


def sends(server: Server, pks: list[int], runs: int, prompt: str, floor: bool = False) -> dict:
    """With `floor`, each round also sends on a page whose socket is routed (Floor): once to the server, then once
    answered at once by the route; the keys `routed_*` and `floor_*`. `pks` holds three conversations a round."""
    from playwright.sync_api import sync_playwright

    rows = {
        k: []
        for k in (
            "placeholder",
            "first",
            "last",
            "finished",
            "frame",
            "sent_arrival",
            "generator",
            "first_arrival",
            "last_arrival",
            "done_arrival",
            "flashes",
            "chars",
        )
    }
    rows["direct_first"], rows["direct_last"] = [], []
    for kind in ("routed", "floor"):
        for key in ("first", "last", "first_arrival"):
            rows[f"{kind}_{key}"] = []
    with (
        sync_playwright() as playwright,
        httpx.Client(base_url=server.upstream_url, timeout=60) as upstream,
    ):
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 860}, bypass_csp=True)
            context.add_cookies([{"name": "sessionid", "value": server.session, "domain": "127.0.0.1", "path": "/"}])
            context.add_init_script(PROBE)
            page = context.new_page()
            relay = Floor()
            if floor:
                routed = context.new_page()
                routed.route_web_socket(re.compile(r".*/ws/.*"), relay.route)
            rounds = runs + 3
            for i, pk in enumerate(pks[:rounds]):
                seen = browser_send(page, server, pk, prompt)
                d_first, d_last, _ = direct(upstream, prompt)
                if floor:
                    relay.mode = "real"
                    through = browser_send(routed, server, pks[rounds + i], prompt)
                    relay.mode = "floor"
                    at_once = browser_send(routed, server, pks[2 * rounds + i], prompt)
                if i < 3:
                    continue  # warm-up: imports, pools, the first renders
                for key, value in seen.items():
                    rows[key].append(value)
                rows["direct_first"].append(d_first)
                rows["direct_last"].append(d_last)
                if floor:
                    for kind, got in (("routed", through), ("floor", at_once)):
                        for key in ("first", "last", "first_arrival"):
                            rows[f"{kind}_{key}"].append(got[key])
        finally:
            browser.close()
    return rows


COLD = """() => {
  var nav = performance.getEntriesByType("navigation")[0];
  var paint = performance.getEntriesByName("first-contentful-paint")[0];
  var early = performance.getEntriesByType("resource").filter(function (r) { return r.startTime < nav.domContentLoadedEventStart; });
  return { usable: nav.domContentLoadedEventEnd, fcp: paint ? paint.startTime : null, load: nav.loadEventEnd,
           response_start: nav.responseStart, response_end: nav.responseEnd, html: nav.encodedBodySize,
           subresources_end: Math.max.apply(null, early.map(function (r) { return r.responseEnd; }).concat([0])),
           subresource_p50: early.map(function (r) { return r.duration; }).sort(function (a, b) { return a - b; })[Math.floor(early.length / 2)] || 0 };
}"""


def cold_loads(server: Server, pk: int, loads: int) -> list[dict]:
    from playwright.sync_api import sync_playwright

    results = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            for i in range(loads + 1):
                context = browser.new_context(viewport={"width": 1280, "height": 860}, bypass_csp=True)
                context.add_cookies(
                    [{"name": "sessionid", "value": server.session, "domain": "127.0.0.1", "path": "/"}]
                )
                page = context.new_page()
                cdp = context.new_cdp_session(page)
                cdp.send("Network.enable")
                cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
                wire = {}
                cdp.on(
                    "Network.loadingFinished",
                    lambda e, wire=wire: wire.__setitem__(e["requestId"], e["encodedDataLength"]),
                )
                page.goto(f"{server.url}/c/{pk}/", wait_until="load")
                page.wait_for_timeout(300)
                timing = page.evaluate(COLD)
                timing["bytes"] = sum(wire.values())
                timing["requests"] = len(wire)
                context.close()
                if i:  # the first load warms the server's caches
                    results.append(timing)
        finally:
            browser.close()
    return results


def warm_loads(server: Server, pk: int, loads: int, after: float = 0) -> list[dict]:
    """In one browser context: a first load, then `loads` navigations to the same page (a person coming back to
    it), the first of them `after` seconds later (past a max-age, a cached file is asked for again). For each: the
    requests that reached the server (not answered from the browser's cache: a 304 counts) and the bytes on the
    wire."""
    from playwright.sync_api import sync_playwright

    results = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 860}, bypass_csp=True)
            context.add_cookies([{"name": "sessionid", "value": server.session, "domain": "127.0.0.1", "path": "/"}])
            page = context.new_page()
            cdp = context.new_cdp_session(page)
            cdp.send("Network.enable")
            seen = {"cached": set(), "wire": {}, "status": {}}
            cdp.on("Network.requestServedFromCache", lambda e: seen["cached"].add(e["requestId"]))
            cdp.on(
                "Network.responseReceived",
                lambda e: seen["status"].__setitem__(
                    e["requestId"],
                    (e["response"]["url"], e["response"]["status"], e["response"].get("fromDiskCache", False)),
                ),
            )
            cdp.on(
                "Network.loadingFinished", lambda e: seen["wire"].__setitem__(e["requestId"], e["encodedDataLength"])
            )
            for i in range(loads + 1):
                if i == 1 and after:
                    time.sleep(after)
                for value in seen.values():
                    value.clear()
                page.goto(f"{server.url}/c/{pk}/", wait_until="load")
                page.wait_for_timeout(300)
                timing = page.evaluate(COLD)
                network = [
                    (url, status)
                    for rid, (url, status, disk) in seen["status"].items()
                    if rid not in seen["cached"] and not disk
                ]
                timing["requests"] = len(network)
                timing["static_requests"] = sum("/static/" in url for url, _ in network)
                timing["bytes"] = sum(seen["wire"].get(rid, 0) for rid in seen["status"] if rid not in seen["cached"])
                timing["urls"] = network
                results.append(timing)
        finally:
            browser.close()
    return results


# The renderer's main thread before the message box is usable, by kind of work (ms, summed over the loads).
TRACE_KINDS = {
    "ParseHTML": "parse HTML",
    "EvaluateScript": "evaluate scripts",
    "v8.compile": "compile scripts",
    "FunctionCall": "run callbacks (event handlers, timers)",
    "UpdateLayoutTree": "style recalculation",
    "Layout": "layout",
    "PrePaint": "pre-paint",
    "Paint": "paint",
    "ParseAuthorStyleSheet": "parse stylesheets",
}


def trace_browser(server: Server, pk: int, path: str) -> None:
    """One cold load under a Chromium trace (Playwright's `browser.start_tracing`), kept at `path` and summarized
    at the end of the run (`summarize_trace`)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 860}, bypass_csp=True)
            context.add_cookies([{"name": "sessionid", "value": server.session, "domain": "127.0.0.1", "path": "/"}])
            page = context.new_page()
            page.goto(f"{server.url}/c/{pk}/", wait_until="load")  # the server's caches warm
            context.clear_cookies()
            context.close()
            context = browser.new_context(viewport={"width": 1280, "height": 860}, bypass_csp=True)
            context.add_cookies([{"name": "sessionid", "value": server.session, "domain": "127.0.0.1", "path": "/"}])
            page = context.new_page()
            categories = ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute", "blink"]
            browser.start_tracing(page=page, path=path, categories=categories)
            page.goto(f"{server.url}/c/{pk}/", wait_until="load")
            page.wait_for_timeout(300)
            browser.stop_tracing()
        finally:
            browser.close()


def summarize_trace(path: str, page_path: str) -> None:
    """The main thread's work from the page's request to its DOMContentLoaded, by kind; forced layouts; scripts."""
    import json

    events = json.loads(Path(path).read_text())["traceEvents"]
    # The page's document: its request (the browser's navigation may not log one), else its first parse.
    requests = [
        e for e in events if e.get("name") == "ResourceSendRequest" and page_path in e["args"]["data"].get("url", "")
    ]
    parses = [
        e for e in events if e.get("name") == "ParseHTML" and page_path in e["args"].get("beginData", {}).get("url", "")
    ]
    if not parses:
        print(f"\n(the trace at {path} has no parse of {page_path}: not summarized)")
        return
    frame = parses[0]["args"]["beginData"]["frame"]
    start = (requests or parses)[0]["ts"]
    end = next(e["ts"] for e in events if e.get("name") == "MarkDOMContent" and e["args"]["data"]["frame"] == frame)
    thread = (parses[0]["pid"], parses[0]["tid"])  # the page's renderer main thread
    main = [e for e in events if (e.get("pid"), e.get("tid")) == thread and e.get("ph") == "X"]
    busy = {}
    for event in main:
        if start <= event["ts"] <= end and event["name"] in TRACE_KINDS:
            busy[TRACE_KINDS[event["name"]]] = busy.get(TRACE_KINDS[event["name"]], 0) + event.get("dur", 0) / 1000
    tasks = sum(e.get("dur", 0) for e in main if e["name"] == "RunTask" and start <= e["ts"] <= end) / 1000
    print(f"\n### One cold load's main thread, request → DOMContentLoaded ({(end - start) / 1000:.0f} ms)\n")
    print(f"| work | ms |\n|---|---|\n| all tasks | {tasks:.1f} |")
    for name, ms in sorted(busy.items(), key=lambda item: -item[1]):
        print(f"| {name} | {ms:.1f} |")
    forced = [
        e
        for e in main
        if e["name"] == "Layout"
        and start <= e["ts"] <= end
        and e.get("args", {}).get("beginData", {}).get("stackTrace")
    ]
    for event in forced:
        frame = event["args"]["beginData"]["stackTrace"][0]
        where = (
            f"{frame.get('functionName') or '?'} ({frame.get('url', '').rsplit('/', 1)[-1]}:{frame.get('lineNumber')})"
        )
        print(f"| layout forced by a script: {where} | {event.get('dur', 0) / 1000:.1f} |")
    scripts = [e for e in main if e["name"] == "EvaluateScript" and start <= e["ts"] <= end]
    for event in scripts:
        url = event.get("args", {}).get("data", {}).get("url", "").rsplit("/", 1)[-1]
        print(f"| evaluate {url or '(inline)'} | {event.get('dur', 0) / 1000:.1f} |")


def p(values, q=0.5):
    values = [v for v in values if v is not None]
    return (statistics.median(values) if q == 0.5 else pct(values, q)) if values else float("nan")


def table(rows: dict, title: str) -> None:
    print(f"\n### {title}\n")
    print("| measure | p50 / p95 | direct p50 / p95 | added p50 / p95 | added per send, p50 |")
    print("|---|---|---|---|---|")

    def line(name, key, other):
        values, base = rows[key], rows[other]
        paired = [v - b for v, b in zip(values, base, strict=True) if v is not None]
        print(
            f"| {name} | {p(values):.1f} / {p(values, 0.95):.1f} ms | {p(base):.1f} / {p(base, 0.95):.1f} ms | "
            f"{p(values) - p(base):+.1f} / {p(values, 0.95) - p(base, 0.95):+.1f} ms | {p(paired):+.1f} ms |"
        )

    line("Send → the send frame leaves the page (vs first chunk)", "frame", "direct_first")
    line("Send → the `sent` reply on the websocket (vs first chunk)", "sent_arrival", "direct_first")
    line("Send → the first chunk reaches the playground's generator", "generator", "direct_first")
    line("Send → placeholder on screen (vs first chunk)", "placeholder", "direct_first")
    line("Send → first delta on the websocket", "first_arrival", "direct_first")
    line("Send → first text on screen", "first", "direct_first")
    line("Send → last delta on the websocket (vs last chunk)", "last_arrival", "direct_last")
    line("Send → `done` on the websocket (vs last chunk)", "done_arrival", "direct_last")
    line("Send → last text on screen", "last", "direct_last")
    line("Send → answer finished on screen (its status: badge, actions, footer)", "finished", "direct_last")
    if rows.get("floor_first"):
        for name, key, direct_key in (("first text", "first", "direct_first"), ("last text", "last", "direct_last")):
            routed, floor, base = rows[f"routed_{key}"], rows[f"floor_{key}"], rows[direct_key]
            over = [r - b - f for r, f, b in zip(routed, floor, base, strict=True) if r is not None and f is not None]
            print(
                f"| routed socket: Send → {name}, through the server / answered at once by the route (the floor) "
                f"| {p(routed):.1f} / {p(floor):.1f} ms | {p(base):.1f} ms | over the floor, per send: "
                f"{p(over):+.1f} ms p50 | |"
            )
    print(
        f"| flashes (whole text shown, then less) | {sum(rows['flashes'])} in {len(rows['flashes'])} sends | | | |\n"
        f"| answer length | {p(rows['chars']):.0f} characters | | | |"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument(
        "--upstream-ttft", type=float, default=50, metavar="MS", help="second pass with this stall (0: none)"
    )
    parser.add_argument("--cold", type=int, default=5, metavar="N", help="cold loads of the chat page")
    parser.add_argument("--rate", default="0", help="LOCAL_API_TOKEN_RATE of the upstream (0: at once)")
    parser.add_argument("--warm", type=int, default=0, metavar="N", help="loads of the chat page with a warm cache")
    parser.add_argument("--warm-after", type=float, default=0, metavar="S", help="seconds before the warm loads")
    parser.add_argument("--trace", metavar="PATH", help="one cold load under a Chromium trace, summarized")
    parser.add_argument("--floor", action="store_true", help="also measure the page's floor (a routed socket)")
    args = parser.parse_args()
    os.environ["RELAY_BENCH_TOKEN_RATE"] = args.rate
    passes = ([0.0] + ([args.upstream_ttft] if args.upstream_ttft else [])) if args.runs else []
    # As `make run` and the Procfile's release do: the collected files are served with their gzip copies.
    devserver.manage(dict(os.environ), "collectstatic", "--noinput", "-v0")
    load_before = os.getloadavg()
    per = (args.runs + 3) * (3 if args.floor else 1)  # conversations a pass
    server = Server(count=len(passes) * per + 1)
    try:
        results = []
        pks = server.conversations[1:]
        for n, stall in enumerate(passes):
            prompt = PROMPT + (f" [fault:stall-{stall / 1000:g}]" if stall else "")
            results.append((stall, sends(server, pks[n * per : (n + 1) * per], args.runs, prompt, args.floor)))
        cold = cold_loads(server, server.conversations[0], args.cold) if args.cold else []
        warm = warm_loads(server, server.conversations[0], args.warm, args.warm_after) if args.warm else []
        if args.trace:
            trace_browser(server, server.conversations[0], args.trace)
    finally:
        server.close()
    load_after = os.getloadavg()
    print(
        f"\n## Chromium vs direct client ({args.runs} sends each, upstream token rate {args.rate}; load average "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after)"
    )
    for stall, rows in results:
        table(rows, f"Upstream first token +{stall:g} ms")
    if cold:
        print(f"\n### Cold load of the chat page ({len(cold)} loads, fresh context, nothing cached)\n")
        print("| measure | p50 | max |\n|---|---|---|")
        for name, key, unit in (
            ("navigation → usable message box (DOMContentLoaded)", "usable", "ms"),
            ("navigation → HTML response start / end", "response_start", "ms"),
            ("", "response_end", "ms"),
            ("navigation → the last script or style of the first paint loaded", "subresources_end", "ms"),
            ("one script or style, request to response end", "subresource_p50", "ms"),
            ("navigation → first contentful paint", "fcp", "ms"),
            ("navigation → load event", "load", "ms"),
            ("bytes on the wire (until load)", "bytes", "B"),
            ("requests", "requests", ""),
            ("HTML (encoded body)", "html", "B"),
        ):
            values = [c[key] for c in cold if c[key] is not None]
            print(f"| {name} | {p(values):,.0f} {unit} | {max(values):,.0f} {unit} |")

    if warm:
        print(
            f"\n### The chat page, first load then {len(warm) - 1} warm loads (one browser context, the first warm "
            f"load {args.warm_after:g} s after the first)\n"
        )
        print("| load | requests to the server (of them static) | bytes on the wire | usable message box |")
        print("|---|---|---|---|")
        for i, load in enumerate(warm):
            name = "first (cold)" if i == 0 else f"warm {i}"
            print(
                f"| {name} | {load['requests']} ({load['static_requests']}) | {load['bytes']:,} B | {load['usable']:.0f} ms |"
            )
        print("\nWarm load requests:", sorted({f"{status} {url}" for load in warm[1:] for url, status in load["urls"]}))

    if args.trace:
        summarize_trace(args.trace, f"/c/{server.conversations[0]}/")


if __name__ == "__main__":
    main()
