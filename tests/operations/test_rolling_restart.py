"""A rolling restart behind a real balancer loses no answer (issue 35.2).

Debian's HAProxy with deploy/haproxy.cfg in front of two daphne processes on PostgreSQL + Redis. Two waves of
streaming answers, each sent through the balancer with a tab (a websocket, also through the balancer) following
it; in each wave one process is restarted mid-stream (SIGTERM, wait for its exit, start it again): wave 1 the first,
wave 2 the second. Then: no answer interrupted, every tab ends showing exactly the saved answer (no gap, no
duplicate word), and no response >= 500 at the balancer.

WAVE answers per wave, 2 x 25 = 50 in all as the issue asks (24 through the balancer and one long one sent to the
survivor, whose tab starts on the restarted process and is handed over mid-answer). On this 2-core machine shared
with four other sessions the scenario took 62-64 s and the whole test 90-97 s including the PostgreSQL test
database's creation (which CI's lane pays once for the suite); fewer answers would save little, since the time is
the answers' length, the drain and a daphne's start, twice.
"""

import asyncio
import os
import re
import threading
import time

import httpx
import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from playground.chat.models import Message
from playground.lib.drain import RECONNECT
from tests.faults.conftest import local_conversation
from tests.operations.tabs import CSRF, SILENCE, Tab, cookie_of

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.spawns,
    pytest.mark.slow,
    pytest.mark.needs_local_api,
    pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL: two processes share a Redis layer"),
    pytest.mark.skipif(
        "postgres" not in os.environ.get("DATABASE_URL", ""),
        reason="needs DATABASE_URL on PostgreSQL: several processes write the same database",
    ),
]

WAVE = 25
# ~10 s: in flight at SIGTERM even when the wave's sends took 9 s (a loaded CI machine; 100 words were not)
PROMPT = "write 200 words about rivers"
LONG_PROMPT = "write 600 words about rivers"  # ~40 s: still streaming when the restarted process is gone
SERVER = {
    "LOCAL_API_TOKEN_RATE": "20",  # each answer streams for ~10 s: in flight when its process is told to stop
    "PLAYGROUND_DRAIN_SECONDS": "40",
    "PLAYGROUND_DB_POOL": "10",
    "PLAYGROUND_CONNECTION_CONCURRENCY": "100",  # every answer at once (the default 8 would queue the others)
    "PLAYGROUND_MAX_ANSWERS_PER_USER": "100",  # one user's 50 answers at once (the default refuses past 8)
}


async def _send(http: httpx.AsyncClient, conversation_pk: int, prompt: str = PROMPT) -> httpx.Response:
    return await http.post(reverse("chat:send", args=[conversation_pk]), data={"content": prompt})


async def _wave(balancer, fleet, victim: int, cookie: str, conversations: list[int], long: int) -> tuple:
    """Send an answer in each conversation through the balancer, and a longer one in `long` straight to the other
    process, whose tab opens on the victim: the victim's drain ends while that answer still streams, so its tab is
    handed over mid-answer. Restart the victim once every tab has shown words."""
    t0 = time.monotonic()
    marks = {}
    # The tabs are open on their conversations (through the balancer; the long answer's on the victim) first.
    tabs = [Tab(balancer.host, cookie, pk) for pk in conversations]
    handed = Tab(balancer.host, cookie, long, first_host=f"127.0.0.1:{fleet.ports[victim]}")
    tabs.append(handed)
    following = [asyncio.create_task(tab.follow(timeout=60)) for tab in tabs]
    await asyncio.wait_for(asyncio.gather(*(tab.opened.wait() for tab in tabs)), 30)
    marks["open"] = round(time.monotonic() - t0, 1)
    headers = {"Cookie": cookie, "X-CSRFToken": CSRF, "HX-Request": "true"}
    survivor = f"http://127.0.0.1:{fleet.ports[1 - victim]}"
    async with (
        httpx.AsyncClient(base_url=balancer.url, headers=headers, timeout=60) as http,
        httpx.AsyncClient(base_url=survivor, headers=headers, timeout=60) as direct,
    ):
        responses = await asyncio.gather(*(_send(http, pk) for pk in conversations), _send(direct, long, LONG_PROMPT))
    assert [r.status_code for r in responses] == [200] * len(responses), [r.text[:300] for r in responses]
    marks["sent"] = round(time.monotonic() - t0, 1)
    # Most tabs have shown words of their answers (on a loaded machine a few answers start late).
    deadline = time.monotonic() + 30
    while sum(bool(tab.text) for tab in tabs) < 0.8 * len(tabs):
        if time.monotonic() > deadline:
            silent = [(t.message_id, t.closes, t.snapshots, t.seq, t.status) for t in tabs if not t.text]
            rows = await asyncio.to_thread(_describe, [t[0] for t in silent])
            raise AssertionError(f"the answers did not start streaming: {silent} {rows} {marks}")
        await asyncio.sleep(0.05)
    marks["shown"] = round(time.monotonic() - t0, 1)
    streaming = await asyncio.to_thread(_streaming, [tab.message_id for tab in tabs])
    fleet.terminate(victim)
    stopped = time.monotonic()
    await asyncio.to_thread(fleet.wait_exit, victim, 60)
    drained = time.monotonic() - stopped
    marks["handed over at seq"] = handed.seq
    await asyncio.to_thread(fleet.start_again, victim)
    marks["started"] = round(time.monotonic() - t0, 1)
    await asyncio.to_thread(balancer.wait_up, f"web{victim + 1}")
    marks["up"] = round(time.monotonic() - t0, 1)
    await asyncio.gather(*following)
    marks["followed"] = round(time.monotonic() - t0, 1)
    return tabs, {"streaming at SIGTERM": streaming, "drain seconds": round(drained, 1), **marks}


def _describe(ids: list[int]) -> list:
    try:  # in a worker thread: its connection is closed after (the test database is dropped at the end)
        return list(Message.objects.filter(pk__in=ids).values_list("pk", "conversation_id", "status", "seq", "content"))
    finally:
        connection.close()


def _streaming(ids: list[int]) -> int:
    try:
        return Message.objects.filter(pk__in=ids, status=Message.STREAMING).count()
    finally:
        connection.close()


def _jobs_at_sigterm(log: str) -> list[int]:
    return [int(n) for n in re.findall(r"SIGTERM: draining, (\d+) jobs", log)]


# Each page's websockets, as the page saw them close (the codes): a handover shows as 4012.
RECORD_CLOSES = """
(() => {
  window.__closes = [];
  const Native = window.WebSocket;
  window.WebSocket = function (url, protocols) {
    const ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    ws.addEventListener("close", (event) => window.__closes.push(event.code));
    return ws;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 });
})();
"""


def _live_share(owner, conversation_pk: int) -> str:
    from playground.chat.models import Conversation
    from playground.sharing import freeze

    share = freeze.new_share(owner, Conversation.objects.get(pk=conversation_pk), live=True)
    share.save()
    freeze.freeze(share)
    return share.token


def _in_a_thread(work):
    """Run `work()` in a thread of its own (sync Playwright holds this thread's event loop), returning a joiner."""
    box = {}

    def run():
        try:
            box["result"] = work()
        except BaseException as exc:
            box["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()

    def join(pump):
        while thread.is_alive():
            pump()
        if "error" in box:
            raise box["error"]
        return box["result"]

    return join


def test_a_rolling_restart_behind_haproxy_interrupts_no_answer(alice, catalog, fleet, balancer):
    from playwright.sync_api import expect, sync_playwright

    from tests.browser.conftest import ARGS, CHROMIUM

    client = Client()
    client.force_login(alice)
    session = client.cookies["sessionid"].value
    cookie = cookie_of(session)
    # One conversation is in both waves, open in a browser tab and followed by a live share's viewer: whichever
    # process their sockets are on, one of the waves restarts it under them.
    watched = local_conversation(alice).pk
    waves = [[watched] + [local_conversation(alice).pk for _ in range(WAVE - 2)] for _ in range(2)]
    longs = [local_conversation(alice).pk for _ in range(2)]
    token = _live_share(alice, watched)

    def scenario():
        async def both():
            return [await _wave(balancer, fleet, victim, cookie, waves[victim], longs[victim]) for victim in (0, 1)]

        return asyncio.run(both())

    started = time.monotonic()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        owner = browser.new_context(base_url=balancer.url)
        owner.add_cookies([{"name": "sessionid", "value": session, "domain": "127.0.0.1", "path": "/"}])
        viewer = browser.new_context(base_url=balancer.url)
        pages = [owner.new_page(), viewer.new_page()]
        for page in pages:
            page.add_init_script(RECORD_CLOSES)
        tab, watcher = pages
        tab.goto(f"/c/{watched}/")
        tab.wait_for_function("() => window.ChatClient !== undefined")
        watcher.goto(f"/s/{token}/")
        expect(watcher.locator("#share-thread")).to_have_attribute("data-live", "open")
        tab.wait_for_timeout(500)
        results = _in_a_thread(scenario)(lambda: tab.wait_for_timeout(200))
        took = time.monotonic() - started
        answers = [tabs[0].message_id for tabs, _ in results]
        shown = {}
        for name, page in (("tab", tab), ("viewer", watcher)):
            for pk in answers:
                article = page.locator(f"#message-{pk}")
                expect(article).to_have_attribute("data-status", "complete", timeout=20_000)
                shown[(name, pk)] = article.locator(".message-body").first.inner_text()
        closes = {name: page.evaluate("window.__closes") for name, page in (("tab", tab), ("viewer", watcher))}
        fresh = owner.new_page()
        fresh.goto(f"/c/{watched}/")
        saved = {pk: fresh.locator(f"#message-{pk}").locator(".message-body").first.inner_text() for pk in answers}
        browser.close()
    print(
        f"rolling restart: {2 * WAVE} answers, {took:.1f} s; per wave {[info for _, info in results]}; "
        f"browser sockets closed with {closes}"
    )

    asked_again = [
        (tab.message_id, entry) for tabs, _ in results for tab in tabs for entry in tab.log if entry[0] == "asked again"
    ]
    print(f"tabs that heard nothing for {SILENCE} s and asked again: {asked_again}")
    # A tab whose deltas crossed Redis may show a word missing until its next snapshot or its end puts it right
    # (the relay's known gap, see fanout.py's docstring); what it ends with is checked exactly below.
    corrected = [(tab.message_id, tab.log) for tabs, _ in results for tab in tabs if tab.diverged]
    print(f"tabs whose text a later snapshot corrected: {corrected}")
    for victim, (tabs, info) in enumerate(results):
        # Each answer was mid-stream when its wave's process was told to stop, and that process had some of them.
        assert info["streaming at SIGTERM"] >= 0.8 * WAVE, info
        assert _jobs_at_sigterm(fleet.log(victim))[-1] > 0, "the restarted process ran none of the answers"
        saved_rows = {m.pk: m for m in Message.objects.filter(pk__in=[tab.message_id for tab in tabs])}
        assert {m.status for m in saved_rows.values()} == {Message.COMPLETE}, [m.status for m in saved_rows.values()]
        for tab_ in tabs:
            assert tab_.status == Message.COMPLETE, (tab_.message_id, tab_.status, info)
            content = saved_rows[tab_.message_id].content
            why = f"tab of message {tab_.message_id}: closes {tab_.closes}, {tab_.log}, stored {tab_.stored_final}"
            if tab_.stored_final:
                # It showed the beginning of the answer (no gap, no duplicate), then the saved answer whole.
                assert content.startswith(tab_.text), why
            else:
                assert tab_.text == content, why
        # The tab on the restarted process whose answer ran on the other was handed over mid-answer (closed with
        # the reconnect code, back through the balancer) and followed it to the end.
        handed = tabs[-1]
        assert handed.closes[:1] == [RECONNECT] and 0 < info["handed over at seq"] < handed.seq, (handed.closes, info)
    # The browser tab and the share's viewer show each answer as saved, and each was handed over once at least.
    for pk in answers:
        assert shown[("tab", pk)] == saved[pk] and shown[("viewer", pk)] == saved[pk]
    assert RECONNECT in closes["tab"] and RECONNECT in closes["viewer"], closes
    assert not Message.objects.filter(status=Message.INTERRUPTED).exists()
    assert balancer.responses_5xx() == 0, balancer.errors()
