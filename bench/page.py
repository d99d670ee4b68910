"""A 500-message conversation page: response time and queries, against a 10-message one, in the same run.

Run by hand: `.venv/bin/python bench/page.py [--messages 500] [--runs 15] [--browser [--browser-runs 7]]`. Same
daphne and SQLite setup as bench/relay.py (playground process only is measured). The messages mix markdown, lists
and code; half are answers with usage. Times are from the client (localhost, so they are the server's time plus a
loopback round trip); the query counts come from a `CaptureQueriesContext` run in `manage.py shell` on the same
database. The first load of each page after the server starts is reported apart: nothing of it is remembered yet.

`--browser`: each page is also opened in headless Chromium, logged in with the same session (static files cached
by one load of each page first), and the first contentful paint and the navigation timing are read.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from relay import Server, devserver, pct

CHROMIUM = "/usr/bin/chromium"

FILL = """
from django.test import Client
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.contrib.auth import get_user_model
from playground.chat import branches
from playground.chat.models import Conversation, Message
user = get_user_model().objects.get(username="bench")
counts = {}
for pk, n in zip(IDS, SIZES):
    conversation = Conversation.objects.get(pk=pk)
    Message.objects.bulk_create(
        Message(
            conversation=conversation,
            role="user" if i % 2 == 0 else "assistant",
            content=f"message **{i}**\\n\\n- a list\\n- of items\\n\\n```python\\nprint({i})\\n```",
            usage={"prompt_tokens": 5, "completion_tokens": 7} if i % 2 else None,
            trace_id=f"trace-{i}" if i % 2 else "",
        )
        for i in range(n)
    )
    # bulk_create skips Message.save(), which would chain each message to the one before.
    rows = list(conversation.messages.all())
    Message.objects.bulk_update(branches.link_linear(rows), ["parent", "selected"])
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    client.get(f"/c/{pk}/")
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/c/{pk}/")
    assert response.status_code == 200
    assert response.content.decode().count('<article class="message') == n
    counts[n] = len(queries)
print("QUERIES", counts)
"""


PAINT = """async () => {
  const painted = () => performance.getEntriesByName("first-contentful-paint")[0];
  for (let i = 0; i < 100 && !painted(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  const navigation = performance.getEntriesByType("navigation")[0];
  return {
    fcp: painted() ? painted().startTime : null,
    response_start: navigation.responseStart,
    response_end: navigation.responseEnd,
    dom_content_loaded: navigation.domContentLoadedEventEnd,
    load: navigation.loadEventEnd,
  };
}"""


def paints(server, ids, sizes, runs: int) -> dict:
    """Navigation timings of each page in Chromium, `runs` loads each, alternating."""
    from playwright.sync_api import sync_playwright

    timings = {n: [] for n in sizes}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 860})
            context.add_cookies([{"name": "sessionid", "value": server.session, "domain": "127.0.0.1", "path": "/"}])
            page = context.new_page()
            for pk in ids:
                page.goto(f"{server.url}/c/{pk}/", wait_until="load")
            for _ in range(runs):
                for pk, n in zip(ids, sizes, strict=True):
                    page.goto(f"{server.url}/c/{pk}/", wait_until="load")
                    timings[n].append(page.evaluate(PAINT))
        finally:
            browser.close()
    return timings


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--browser", action="store_true", help="first paint in headless Chromium too")
    parser.add_argument("--browser-runs", type=int, default=7)
    args = parser.parse_args()
    server = Server(count=2)
    try:
        ids, sizes = server.conversations[:2], [10, args.messages]
        script = FILL.replace("IDS", repr(ids)).replace("SIZES", repr(sizes))
        out = devserver.manage(server.env, "shell", "-c", script, capture_output=True, text=True).stdout
        queries = out.strip().splitlines()[-1]
        times, size, first = {n: [] for n in sizes}, {}, {}
        with httpx.Client(base_url=server.url, headers={"Cookie": server.cookie}, timeout=60) as http:
            for pk, n in zip(ids, sizes, strict=True):
                start = time.perf_counter()
                http.get(f"/c/{pk}/").raise_for_status()  # the first load renders every article
                first[n] = (time.perf_counter() - start) * 1000
            for _ in range(args.runs):
                for pk, n in zip(ids, sizes, strict=True):
                    start = time.perf_counter()
                    response = http.get(f"/c/{pk}/")
                    times[n].append((time.perf_counter() - start) * 1000)
                    response.raise_for_status()
                    size[n] = len(response.content)
        browser = paints(server, ids, sizes, args.browser_runs) if args.browser else None
    finally:
        server.close()
    print(f"\n### Conversation page ({args.runs} loads each, after the first load)\n")
    print(f"{queries}\n\n| messages | first load | response time p50 / p95 / best | HTML |\n|---|---|---|---|")
    for n in sizes:
        t = times[n]
        print(
            f"| {n} | {first[n]:.0f} ms | {statistics.median(t):.0f} / {pct(t, 0.95):.0f} / {min(t):.0f} ms "
            f"| {size[n]:,} B |"
        )
    if browser:
        print(f"\n### In Chromium ({args.browser_runs} loads each, p50 / max, ms from navigation start)\n")
        print("| messages | first contentful paint | response start | response end | DOMContentLoaded | load |")
        print("|---|---|---|---|---|---|")
        for n in sizes:
            row = [f"{n}"]
            for name in ("fcp", "response_start", "response_end", "dom_content_loaded", "load"):
                values = [entry[name] for entry in browser[n] if entry[name] is not None]
                row.append(f"{statistics.median(values):.0f} / {max(values):.0f}" if values else "none")
            print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
