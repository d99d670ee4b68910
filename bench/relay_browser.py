"""Benchmark: a ~100 KB markdown answer streamed into the chat page in Chromium at 1,000 tokens/s.

Starts its own daphne on a free port (LOCAL_API_TOKEN_RATE=1000, a temporary SQLite database, migrated
first), logs a user in, sends a message from the page and measures, while the answer streams:

- the longest main-thread task (PerformanceObserver "longtask"; goal under 50 ms);
- the lag between a delta arriving on the websocket and the frame that puts it on screen, for the last
  delta (the last token on screen behind the last token received; goal under 100 ms) and over all deltas.

    .venv/bin/python bench/relay_browser.py [--words 17500] [--plain-tail] [--trace FILE]
"""

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from playground import devserver

KEY = "sk-local-bench"
CHROMIUM = "/usr/bin/chromium"
TRACE_CATEGORIES = ["devtools.timeline", "v8", "blink", "disabled-by-default-devtools.timeline"]

# Runs before the page's scripts: records long tasks, websocket arrivals by seq, and the frames that show them.
PROBE = """
window.__bench = { longtasks: [], arrivals: {}, shown: {}, lastSeq: 0, doneAt: 0, bytes: 0, deltas: 0 };
new PerformanceObserver(function (list) {
  list.getEntries().forEach(function (e) { window.__bench.longtasks.push([e.startTime, e.duration]); });
}).observe({ type: "longtask", buffered: true });
(function () {
  var Native = window.WebSocket;
  function Probed(url, protocols) {
    var ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    ws.addEventListener("message", function (event) {
      var now = performance.now();
      var head = event.data.slice(0, 120);
      var type = /"type": ?"(\\w+)"/.exec(head);
      var seq = /"seq": ?(\\d+)/.exec(event.data.slice(0, 200));
      if (!type) return;
      if (type[1] === "delta" && seq) {
        window.__bench.arrivals[seq[1]] = now;
        window.__bench.lastSeq = Math.max(window.__bench.lastSeq, Number(seq[1]));
        window.__bench.bytes += event.data.length;
        window.__bench.deltas += 1;
      } else if (type[1] === "done") {
        window.__bench.doneAt = now;
      }
    });
    return ws;
  }
  Probed.prototype = Native.prototype;
  ["CONNECTING", "OPEN", "CLOSING", "CLOSED"].forEach(function (k) { Probed[k] = Native[k]; });
  window.WebSocket = Probed;
})();
document.addEventListener("DOMContentLoaded", function () {
  new MutationObserver(function () {
    var client = window.ChatClient;
    if (!client) return;
    var seq = client.stats.shownSeq;
    if (seq && !(seq in window.__bench.shown)) window.__bench.shown[seq] = performance.now();
  }).observe(document.getElementById("thread"), { childList: true, subtree: true, characterData: true });
});
"""


def server_env(port: int, tmp: Path) -> dict:
    return devserver.sqlite_env(
        tmp,
        DJANGO_SETTINGS_MODULE="playground.settings",
        LOCAL_API_KEYS=KEY,
        LOCAL_API_TOKEN_RATE="1000",
        LOCAL_API_RPM="100000",
        LOCAL_API_TPM="1000000000",
        PORT=str(port),
        LOCAL_API_BASE_URL=f"http://127.0.0.1:{port}/local/v1",
        PLAYGROUND_ALLOWED_UPSTREAM_HOSTS="127.0.0.1,localhost",
        LOG_LEVEL="WARNING",
    )


def start(port: int, env: dict) -> subprocess.Popen:
    devserver.manage(env, "migrate", "-v0")
    devserver.manage(env, "seed_catalog", "-v0")
    return devserver.start_daphne(port, env)


def prepare(env: dict) -> tuple[str, int]:
    """A user with a conversation on local/chat; returns (session cookie, conversation id)."""
    os.environ.update(env)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from playground.chat.models import Conversation
    from playground.connections.models import ensure_local_connection

    user = get_user_model().objects.create_user("bench", "bench@example.com", "bench-password-123")
    # local/reasoner-effort is the local model whose output limit (32768 tokens) fits a 100 KB answer.
    conversation = Conversation.objects.create(
        owner=user,
        connection=ensure_local_connection(user),
        model_id="local/reasoner-effort",
        params={"max_tokens": 30000},
    )
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value, conversation.pk


# --plain-tail: the unfinished tail shown as text, as before live markdown (static/js/chat/markdown.js), for an A/B.
# Times each live render of the tail (static/js/chat/markdown.js), the part of a frame live markdown adds.
TIME_TAIL = """() => {
  var live = window.ChatMarkdown;
  if (!live) return;
  var render = live.renderTail;
  window.__bench.tail = [];
  live.renderTail = function (element, text) {
    var started = performance.now();
    render(element, text);
    window.__bench.tail.push(performance.now() - started);
  };
}"""
PLAIN_TAIL = "Object.defineProperty(window, 'ChatMarkdown', { get: function () {}, set: function () {} });"


def run(words: int, trace: str | None = None, plain_tail: bool = False) -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        port = devserver.free_port()
        env = server_env(port, Path(tmp))
        process = start(port, env)
        try:
            session, pk = prepare(env)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
                )
                context = browser.new_context(viewport={"width": 1280, "height": 860})
                context.add_cookies([{"name": "sessionid", "value": session, "domain": "127.0.0.1", "path": "/"}])
                context.add_init_script(PROBE)
                if plain_tail:
                    context.add_init_script(PLAIN_TAIL)
                page = context.new_page()
                page.goto(f"http://127.0.0.1:{port}/c/{pk}/")
                page.wait_for_function("window.ChatClient !== undefined")
                page.wait_for_timeout(500)
                page.evaluate(TIME_TAIL)
                box = page.get_by_role("textbox", name="Message")
                box.fill(f"Write {words} words about rivers")
                if trace:
                    browser.start_tracing(page=page, path=trace, categories=TRACE_CATEGORIES)
                started = time.perf_counter()
                box.press("Enter")
                answer = page.locator('article[data-role="assistant"]').last
                answer.wait_for()
                page.wait_for_function(
                    "n => n.dataset.status !== 'streaming'", arg=answer.element_handle(), timeout=300_000
                )
                elapsed = time.perf_counter() - started
                page.wait_for_timeout(300)
                if trace:
                    browser.stop_tracing()
                data = page.evaluate("window.__bench")
                data["final"] = page.evaluate("window.ChatClient.stats.patched ? 'patched in place' : 'replaced'")
                size = answer.locator(".message-body").evaluate("n => n.innerText.length")
                status = answer.get_attribute("data-status")
                browser.close()
        finally:
            devserver.stop(process)

    report(data, size, status, elapsed)
    if trace:
        explain(trace)


def explain(path: str) -> None:
    """What the long main-thread tasks of the trace spent their time on."""
    events = json.loads(Path(path).read_text())["traceEvents"]
    complete = [e for e in events if e.get("ph") == "X" and "dur" in e]
    tasks = [e for e in complete if e["name"] in ("RunTask", "ThreadControllerImpl::RunTask") and e["dur"] > 50_000]
    for task in sorted(tasks, key=lambda e: -e["dur"])[:5]:
        start, end = task["ts"], task["ts"] + task["dur"]
        inside = collections.Counter()
        for e in complete:
            if e is not task and e["tid"] == task["tid"] and e["pid"] == task["pid"] and start <= e["ts"] < end:
                inside[e["name"]] += e["dur"]
        top = ", ".join(f"{name} {dur / 1000:.0f} ms" for name, dur in inside.most_common(6))
        print(f"- task of {task['dur'] / 1000:.0f} ms: {top}")


def report(data: dict, size: int, status: str, elapsed: float) -> None:
    arrivals = {int(k): v for k, v in data["arrivals"].items()}
    shown = sorted((int(k), v) for k, v in data["shown"].items())
    lags = []
    for seq, arrived in arrivals.items():
        frame = next((t for s, t in shown if s >= seq), None)
        if frame is not None:
            lags.append(frame - arrived)
    last = data["lastSeq"]
    last_frame = next((t for s, t in shown if s >= last), None)
    last_lag = (last_frame - arrivals[last]) if last_frame is not None and last in arrivals else float("nan")
    first = min(arrivals.values()) if arrivals else 0
    end = max(arrivals.values()) if arrivals else 0
    during = [d for start, d in data["longtasks"] if first - 50 <= start <= end + 50]
    after = [d for start, d in data["longtasks"] if start > end + 50]
    lags.sort()
    tasks = ", ".join(f"{d:.0f} ms at +{(start - first) / 1000:.1f} s" for start, d in data["longtasks"])

    def pct(values, p):
        return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")

    print(
        f"Answer: {size / 1000:.1f} KB of text, status {status}, {data['deltas']} websocket deltas "
        f"({data['bytes'] / 1000:.0f} KB), {elapsed:.1f} s from Enter to the final render "
        f"(final render {data['final']}).\n"
    )
    print("| metric | value | goal |")
    print("|---|---:|---:|")
    print(f"| longest main-thread task during the stream | {max(during, default=0):.0f} ms | < 50 ms |")
    print(f"| long tasks (> 50 ms) during the stream | {len(during)} | 0 |")
    print(f"| longest task for the final render (after the stream) | {max(after, default=0):.0f} ms | |")
    print(f"| lag of the last token on screen behind its arrival | {last_lag:.1f} ms | < 100 ms |")
    tail = sorted(data.get("tail") or [])
    if tail:
        print(
            f"| live markdown of the tail per frame, p50 / p95 / max ({len(tail)} frames) | "
            f"{pct(tail, 0.5):.2f} / {pct(tail, 0.95):.2f} / {tail[-1]:.1f} ms | |"
        )
        slowest = sorted(range(len(data["tail"])), key=lambda i: -data["tail"][i])[:5]
        print(f"<!-- slowest tail renders (frame: ms): {[(i, round(data['tail'][i], 1)) for i in slowest]} -->")
    print(
        f"| delta arrival to on screen, p50 / p95 / max | {pct(lags, 0.5):.1f} / {pct(lags, 0.95):.1f} / "
        f"{max(lags, default=float('nan')):.1f} ms | |"
    )
    if lags:
        print(f"| mean delta arrival to on screen | {statistics.fmean(lags):.1f} ms | |")
    print(f"\nLong tasks (relative to the first delta): {tasks or 'none'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=17500, help="answer length (the local model caps at 20000)")
    parser.add_argument("--trace", help="write a Chromium trace here and explain the long tasks")
    parser.add_argument(
        "--plain-tail", action="store_true", help="show the tail as text (no live markdown), for an A/B"
    )
    arguments = parser.parse_args()
    run(arguments.words, arguments.trace, arguments.plain_tail)
