"""Relay overhead of the chat playground: time to first token and concurrent streams, against a direct client.

Run by hand: `.venv/bin/python bench/relay.py [--runs 50] [--streams 200] [--send post|ws]`. It starts two daphne processes on
temporary SQLite databases (migrated once, then copied): the upstream (the local API, unpaced unless `--rate`) and
the playground, whose Local connection points at the upstream's /local/v1, so the relay never shares its CPU
with the generator. The playground runs with DEBUG_RELAY_TIMING=1: each delta carries `t`, the wall-clock time
its first upstream chunk reached the generator. It prints a markdown table.

- TTFT: from the start of the chat:send POST to the first delta on the conversation's websocket, vs. a direct
  httpx stream on the upstream (first content chunk). Same prompt, same run, alternating.
- Relay hop: from the generator receiving the first upstream chunk (`t`) to the websocket client receiving it.
- Concurrency: N conversations, N websockets, N sends at once; upstream chunks/s delivered to the websockets vs.
  N direct streams at once on the upstream, and the playground's resident memory per stream (peak minus idle,
  over N).
- Scale-out (`--processes 2`, on PostgreSQL + Redis): the streams split between two playground processes (each
  sent and watched on its own), and `--observers` more tabs watch the first conversations from the other process
  than the one generating them: their relay hop crosses the Redis channel layer (`--observer-tabs` of them on each
  of those conversations, for the fan-out within a process). Each of their deltas is also compared with the
  generating process's tab of the same conversation: how long after it the other tab showed as much. RSS is the
  processes' sum.
- `--rate N`: the upstream paces each stream at N tokens a second (a steady load, as real answers come) instead of
  sending every answer as fast as it can (a burst that saturates the machine for a second or two).
"""

import argparse
import asyncio
import html
import itertools
import json
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
import websockets

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from playground import devserver

KEY = "sk-local-bench-" + secrets.token_hex(8)
CSRF = secrets.token_hex(16)

SETUP = """
import json
from django.contrib.auth import get_user_model, SESSION_KEY, BACKEND_SESSION_KEY, HASH_SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.core.management import call_command
from playground.chat.models import Conversation
from playground.connections.models import Connection
call_command("seed_catalog", verbosity=0)
user = get_user_model().objects.create_user("bench", password="bench-password-123")
session = SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
local = Connection.objects.get(owner=user, is_local=True)
# The upstream has its own database: the key minted at sign-up lives here only, so use the operator key.
local.set_key("KEY")
local.concurrency = COUNT  # the relay is measured, not the gate's slots (the default 8 would queue the streams)
local.save()
ids = [Conversation.objects.create(owner=user, connection=local, model_id="local/chat").pk for _ in range(COUNT)]
print(json.dumps({"session": session.session_key, "conversations": ids}))
"""


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


class Server:
    """The upstream (local API) and the playground, each in its own daphne process and SQLite database."""

    def __init__(
        self, count: int, processes: int = 1, database_url: str = "", redis_url: str = "", rate: float | None = None
    ):
        self.tmp = tempfile.TemporaryDirectory(prefix="relay-bench-")
        self.upstream_port, self.port = devserver.free_port(), devserver.free_port()
        self.ports = [self.port, *(devserver.free_port() for _ in range(processes - 1))]
        self.url = f"http://127.0.0.1:{self.port}"
        self.upstream_url = f"http://127.0.0.1:{self.upstream_port}"
        base = {
            **os.environ,
            "LOCAL_API_KEYS": KEY,
            "LOCAL_API_TOKEN_RATE": f"{rate:g}" if rate is not None else os.environ.get("RELAY_BENCH_TOKEN_RATE", "0"),
            "LOCAL_API_RPM": "1000000",
            "LOCAL_API_TPM": "1000000000",
            "PLAYGROUND_MAX_ANSWERS_PER_USER": "100000",  # every stream at once (the default refuses past 8)
            "PLAYGROUND_DATA_DIR": self.tmp.name,
            "LOG_LEVEL": "WARNING",
        }
        base.pop("REDIS_URL", None)
        base.pop("DJANGO_DEBUG", None)
        self.env = {
            **base,
            "DATABASE_URL": database_url or f"sqlite:///{self.tmp.name}/bench.sqlite3",
            "PORT": str(self.port),
            "LOCAL_API_BASE_URL": f"{self.upstream_url}/local/v1",
            "DEBUG_RELAY_TIMING": "1",
            **({"REDIS_URL": redis_url} if redis_url else {}),
        }
        upstream_env = {
            **base,
            "DATABASE_URL": f"sqlite:///{self.tmp.name}/upstream.sqlite3",
            "PORT": str(self.upstream_port),
        }
        if database_url:  # a PostgreSQL database of the bench's own: emptied (an earlier run's keys are
            # encrypted with its temporary key: no checks until then), and the upstream migrated apart
            devserver.manage(self.env, "migrate", "-v", "0", "--skip-checks")
            devserver.manage(self.env, "flush", "--no-input", "--skip-checks")
            devserver.manage(upstream_env, "migrate", "-v", "0")
        else:
            devserver.manage(self.env, "migrate", "-v", "0")
            shutil.copy(f"{self.tmp.name}/bench.sqlite3", f"{self.tmp.name}/upstream.sqlite3")
        out = devserver.manage(
            self.env,
            "shell",
            "-c",
            SETUP.replace("COUNT", str(count)).replace('"KEY"', repr(KEY)),
            capture_output=True,
            text=True,
        ).stdout
        self.setup = setup = json.loads(out.strip().splitlines()[-1])
        self.session, self.conversations = setup["session"], setup["conversations"]
        # RELAY_BENCH_LOGS=<dir> keeps the servers' output after the run. Twisted's default listen backlog (50)
        # overflows when 200 clients connect at once.
        logs = os.environ.get("RELAY_BENCH_LOGS") or self.tmp.name
        self.upstream = devserver.start_daphne(
            self.upstream_port, upstream_env, log=f"{logs}/upstream.log", backlog=1024
        )
        self.processes = []
        try:
            for i, port in enumerate(self.ports):
                env = {**self.env, "PORT": str(port)}
                log = f"{logs}/playground{i or ''}.log"
                self.processes.append(devserver.start_daphne(port, env, log=log, backlog=1024))
        except RuntimeError:
            devserver.stop(self.upstream, *self.processes)
            raise
        self.process = self.processes[0]

    @property
    def cookie(self) -> str:
        return f"sessionid={self.session}; csrftoken={CSRF}"

    def close(self):
        devserver.stop(*self.processes, self.upstream)
        self.tmp.cleanup()


async def send(http: httpx.AsyncClient, server: Server, pk: int, content: str) -> float:
    """Seconds the send POST took."""
    start = time.perf_counter()
    response = await http.post(
        f"/c/{pk}/send/",
        data={"content": content},
        headers={"Cookie": server.cookie, "X-CSRFToken": CSRF, "HX-Request": "true", "Referer": server.url},
    )
    response.raise_for_status()
    return time.perf_counter() - start


async def send_frame(ws, content: str) -> None:
    """A send over the conversation's websocket (the chat's `send` action); its reply comes on the socket."""
    await ws.send(json.dumps({"action": "send", "id": secrets.token_hex(6), "content": content}))


def ws_connect(server: Server, pk: int, port: int | None = None):
    port = port or server.port
    return websockets.connect(
        f"ws://127.0.0.1:{port}/ws/chat/{pk}/",
        additional_headers={"Cookie": server.cookie, "Origin": f"http://127.0.0.1:{port}"},
        max_size=None,
    )


async def direct_stream(http: httpx.AsyncClient, content: str, history: list | None = None) -> tuple[float, int]:
    """(seconds to the first content chunk, chunks) of one direct stream (after `history`, when given)."""
    start = time.perf_counter()
    first, chunks = None, 0
    messages = [*(history or []), {"role": "user", "content": content}]
    body = {"model": "local/chat", "messages": messages, "stream": True}
    async with http.stream(
        "POST", "/local/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY}"}
    ) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                chunks += 1
                if first is None:
                    first = time.perf_counter() - start
    return first, chunks


async def turn(ws, content: str) -> dict:
    """Send over the socket and follow the turn to its end: times from the send, and the answer's text."""
    wall, start = time.time(), time.perf_counter()
    await send_frame(ws, content)
    first = posted = stamp = None
    text = []
    while True:
        event = json.loads(await ws.recv())
        if event["type"] == "sent":
            posted = time.perf_counter() - start
        if event["type"] == "delta":
            text.append(event.get("text") or "")
            if first is None:
                first, received = time.perf_counter() - start, time.time()
                stamp = event.get("t")
        if event["type"] in ENDS:
            break
    if first is None:
        raise RuntimeError(f"the turn ended without a delta: {event['type']}: {error_words(event)}")
    timing = {"first": first, "posted": posted, "text": "".join(text)}
    if stamp is not None:
        timing["hop"], timing["to_generator"] = received - stamp, stamp - wall
    return timing


END_WAIT = 300  # seconds a stream may take to its final event before the bench counts it as never ending
ENDS = ("done", "error", "refused", "failed", "invalid")  # a turn's last frame (the last three: the send's reply)


def error_words(event: dict) -> str:
    """What a stream's error says, in words (the error card's text, or the send reply's error), for counting."""
    if event["type"] == "done":
        return ""
    words = event.get("error") or "; ".join(event.get("errors") or []) or event.get("html") or ""
    words = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", words)).split())
    return words[:160]


async def post_turn(ws, http: httpx.AsyncClient, server: Server, pk: int, content: str) -> dict:
    """Send by the form POST and follow the turn on the socket: times from the send."""
    wall, start = time.time(), time.perf_counter()
    sent = asyncio.create_task(send(http, server, pk, content))
    first = stamp = None
    while True:
        event = json.loads(await ws.recv())
        if event["type"] == "delta" and first is None:
            first, received = time.perf_counter() - start, time.time()
            stamp = event.get("t")
        if event["type"] in ("done", "error"):
            break
    timing = {"first": first, "posted": await sent}
    if stamp is not None:
        timing["hop"], timing["to_generator"] = received - stamp, stamp - wall
    return timing


async def ttft(server: Server, runs: int, via: str = "post", upstream_ttft: float = 0, fresh: bool = False) -> dict:
    """Each run is the second turn of a conversation of its own: the upstream gets the same body from the
    playground as from the direct client (the first question, its answer, the question again), 200 ms
    apart (the typing). With `--send post` the first turn is sent over the socket, the measured one by the form.
    With `fresh`, each run is the first turn of an empty conversation on a socket just opened (a page's first
    send), against a direct stream of the question alone."""
    prompt = "write 20 words about rivers"
    if upstream_ttft:  # the local API's stall directive: its first token comes that much later, for both
        prompt += f" [fault:stall-{upstream_ttft / 1000:g}]"
    relayed, direct, hop, to_generator, post = [], [], [], [], []
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=60) as http,
        httpx.AsyncClient(base_url=server.upstream_url, timeout=60) as upstream,
    ):
        for _ in range(5):  # warm-up: imports, connection pools, first queries
            await direct_stream(upstream, prompt)
        for i in range(runs + 3):
            pk = server.conversations[i]
            async with ws_connect(server, pk) as ws:
                history = None
                if fresh:
                    await asyncio.sleep(0.2)  # the page's socket is open before the person has typed
                    timing = await turn(ws, prompt)
                else:
                    answer = (await turn(ws, prompt))["text"]
                    history = [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
                    await asyncio.sleep(0.2)  # the person reads the answer and types
                    timing = await (post_turn(ws, http, server, pk, prompt) if via == "post" else turn(ws, prompt))
            d, _ = await direct_stream(upstream, prompt, history)
            if i >= 3:
                relayed.append(timing["first"] * 1000)
                direct.append(d * 1000)
                post.append(timing["posted"] * 1000)
                if "hop" in timing:
                    hop.append(timing["hop"] * 1000)
                    to_generator.append(timing["to_generator"] * 1000)
    return {"relayed": relayed, "direct": direct, "hop": hop, "to_generator": to_generator, "post": post}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def machine_busy() -> tuple[float, float]:
    """The machine's busy and total CPU seconds so far (all cores)."""
    ticks = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return (sum(ticks) - idle) / os.sysconf("SC_CLK_TCK"), sum(ticks) / os.sysconf("SC_CLK_TCK")


def cpu_now(server: Server) -> dict:
    return {
        "playground": sum(cpu_seconds(process.pid) for process in server.processes),
        "upstream": cpu_seconds(server.upstream.pid),
        "bench": sum(os.times()[:2]),
        "machine": machine_busy(),
    }


def rss_total_kb(server: Server) -> int:
    return sum(rss_kb(process.pid) for process in server.processes)


async def concurrency(server: Server, streams: int, via: str = "post", observers: int = 1, per: int = 1) -> dict:
    """With more than one playground process, stream i is sent and watched on process i mod n, and `observers`
    more tabs watch the first conversations from the next process (their deltas cross Redis)."""
    prompt = "write 300 words about mountains"
    limits = httpx.Limits(max_connections=streams + 10)
    ports = server.ports
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=120, limits=limits) as http,
        httpx.AsyncClient(base_url=server.upstream_url, timeout=120, limits=limits) as upstream,
    ):
        # Direct: N streams at once on the upstream.
        start = time.perf_counter()
        results = await asyncio.gather(*(direct_stream(upstream, prompt) for _ in range(streams)))
        direct_seconds = time.perf_counter() - start
        direct_chunks = sum(chunks for _, chunks in results)

        # Relayed: N websockets, N sends at once; count the upstream chunks the deltas carried (seq).
        idle = rss_total_kb(server)
        pks = server.conversations[1 : streams + 1]
        sockets = [await ws_connect(server, pk, ports[i % len(ports)]).__aenter__() for i, pk in enumerate(pks)]
        crossing = len(ports) > 1 and [
            await ws_connect(server, pk, ports[(i + 1) % len(ports)]).__aenter__()
            for i, pk in enumerate(pks[:observers])
            for _ in range(per)
        ]
        peak = base = rss_total_kb(server)
        done = asyncio.Event()
        hops: list[float] = []
        cross_hops: list[float] = []
        kinds: Counter = Counter()  # websocket messages by type
        steps: list[list[float]] = []  # the other process's tabs: chunk -> outbox -> pushed -> popped -> tab

        async def sample():
            nonlocal peak
            while not done.is_set():
                peak = max(peak, rss_total_kb(server))
                await asyncio.sleep(0.05)

        async def watch(ws, hops=hops, who="stream", timeline=None):
            messages, last_seq = 0, 0
            try:
                async with asyncio.timeout(END_WAIT):
                    while True:
                        event = json.loads(await ws.recv())
                        kinds[event["type"]] += 1
                        if event["type"] == "delta":
                            messages += 1
                            last_seq = event["seq"]
                            if timeline is not None:
                                timeline.append((last_seq, time.perf_counter()))
                            if event.get("t") is not None:
                                received = time.time()
                                hops.append((received - event["t"]) * 1000)
                                if "popped" in event:  # crossed processes: where the time went
                                    stamps = [event[key] for key in ("t", "posted", "pushed", "popped")] + [received]
                                    steps.append([(b - a) * 1000 for a, b in itertools.pairwise(stamps)])
                        if event["type"] in ENDS:
                            return messages, event.get("seq") or last_seq, event["type"], error_words(event)
            except TimeoutError:
                return messages, last_seq, f"no end ({who})", f"no final event within {END_WAIT} s"

        sampler = asyncio.create_task(sample())
        cpu_before = cpu_now(server)
        start = time.perf_counter()
        # The observed conversations' deltas as each tab received them, (seq, when): the other process's tab is
        # compared with the generating process's tab on the same conversation, delta by delta.
        own_lines = {pk: [] for pk in pks[:observers]} if crossing else {}
        cross_lines = [(pk, []) for pk in pks[:observers] for _ in range(per)] if crossing else []
        watchers = [
            asyncio.create_task(watch(ws, timeline=own_lines.get(pk))) for ws, pk in zip(sockets, pks, strict=True)
        ]
        lookers = [
            asyncio.create_task(watch(ws, cross_hops, "other process's tab", line))
            for ws, (_, line) in zip(crossing or [], cross_lines, strict=True)
        ]
        if via == "post":
            await asyncio.gather(*(send(http, server, pk, prompt) for pk in pks))
        else:
            await asyncio.gather(*(send_frame(ws, prompt) for ws in sockets))
        outcomes = await asyncio.gather(*watchers)
        relay_seconds = time.perf_counter() - start
        cpu_after = cpu_now(server)
        looked = await asyncio.gather(*lookers)
        done.set()
        await sampler
        for ws in [*sockets, *(crossing or [])]:
            await ws.close()
    return {
        "direct_chunks_per_s": direct_chunks / direct_seconds,
        "direct_seconds": direct_seconds,
        "relay_chunks_per_s": sum(seq for _, seq, *_ in outcomes) / relay_seconds,
        "relay_seconds": relay_seconds,
        "ws_messages": sum(m for m, *_ in outcomes),
        "upstream_chunks": sum(seq for _, seq, *_ in outcomes),
        "errors": Counter(f"{kind}: {words}" for *_, kind, words in outcomes + looked if kind != "done"),
        "idle_rss_mb": idle / 1024,
        "connected_rss_mb": base / 1024,
        "peak_rss_mb": peak / 1024,
        "rss_per_stream_kb": (peak - idle) / streams,
        "hops": hops,
        "cross_hops": cross_hops,
        "steps": steps,
        "behind": behind(own_lines, cross_lines),
        "cpu": {key: cpu_after[key] - cpu_before[key] for key in ("playground", "upstream", "bench")},
        "machine": [after - before for after, before in zip(cpu_after["machine"], cpu_before["machine"], strict=True)],
        "kinds": kinds,
    }


def behind(own_lines: dict, cross_lines: list) -> list[float]:
    """Milliseconds each delta on another process's tab came after the generating process's tab of the same
    conversation had shown as much (its first delta whose seq reached the other's)."""
    lags = []
    for pk, line in cross_lines:
        own = own_lines[pk]
        for seq, when in line:
            reached = next((at for own_seq, at in own if own_seq >= seq), None)
            if reached is not None:
                lags.append((when - reached) * 1000)
    return lags


class Profile:
    """py-spy (in the dev requirements) sampling the playground process during one phase, in collapsed stacks."""

    def __init__(self, path: str | None, pid: int):
        self.path, self.pid, self.process = path, pid, None

    def __enter__(self):
        if self.path:
            command = [
                str(Path(sys.executable).parent / "py-spy"),
                "record",
                "--pid",
                str(self.pid),
                "--format",
                "raw",
                "--rate",
                "500",
            ]
            self.process = subprocess.Popen(
                [*command, "--output", self.path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            time.sleep(1)  # attached
        return self

    def __exit__(self, *exc):
        if self.process is not None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait(timeout=60)


def row(name: str, values: list[float], other: list[float] | None = None) -> str:
    if not values:
        return f"| {name} | n/a | | |"
    p50, p95 = statistics.median(values), pct(values, 0.95)
    if other is None:
        return f"| {name} p50 / p95 | {p50:.1f} / {p95:.1f} ms | — | — |"
    o50, o95 = statistics.median(other), pct(other, 0.95)
    return f"| {name} p50 / p95 | {p50:.1f} / {p95:.1f} ms | {o50:.1f} / {o95:.1f} ms | {p50 - o50:+.1f} / {p95 - o95:+.1f} ms |"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument(
        "--send", choices=("post", "ws"), default="post", help="the form POST, or the send frame on the websocket"
    )
    parser.add_argument(
        "--upstream-ttft",
        type=float,
        default=0,
        metavar="MS",
        help="the upstream's own time to first token (the local API's stall directive), for both clients",
    )
    parser.add_argument(
        "--first",
        action="store_true",
        help="time the first send on a socket just opened, in an empty conversation (a page's first send)",
    )
    parser.add_argument(
        "--py-spy", metavar="PREFIX", help="profile the playground: PREFIX-ttft.txt, PREFIX-streams.txt"
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="playground daphne processes (more than one: on PostgreSQL + Redis, RELAY_BENCH_DATABASE_URL and "
        "RELAY_BENCH_REDIS_URL, a database and a Redis db the bench may empty)",
    )
    parser.add_argument("--observers", type=int, default=1, help="tabs on the other process (--processes > 1)")
    parser.add_argument("--observer-tabs", type=int, default=1, help="tabs of each observed conversation there")
    parser.add_argument(
        "--rate",
        type=float,
        default=None,
        metavar="TOKENS_PER_S",
        help="the upstream's pace per stream (LOCAL_API_TOKEN_RATE; default RELAY_BENCH_TOKEN_RATE or 0, unpaced): "
        "a steady load instead of a burst",
    )
    args = parser.parse_args()
    database_url, redis_url = (
        os.environ.get("RELAY_BENCH_DATABASE_URL", ""),
        os.environ.get("RELAY_BENCH_REDIS_URL", ""),
    )
    if args.processes > 1 and not (database_url and redis_url):
        parser.error("--processes > 1 needs RELAY_BENCH_DATABASE_URL and RELAY_BENCH_REDIS_URL")
    server = Server(
        count=max(args.streams, args.runs + 3) + 1,
        processes=args.processes,
        database_url=database_url,
        redis_url=redis_url,
        rate=args.rate,
    )
    try:
        pid = server.process.pid
        with Profile(args.py_spy and f"{args.py_spy}-ttft.txt", pid):
            t = asyncio.run(ttft(server, args.runs, args.send, args.upstream_ttft, args.first)) if args.runs else None
        with Profile(args.py_spy and f"{args.py_spy}-streams.txt", pid):
            c = (
                asyncio.run(concurrency(server, args.streams, args.send, args.observers, args.observer_tabs))
                if args.streams
                else None
            )
    finally:
        server.close()
    how = "send POST" if args.send == "post" else "send frame"
    print(
        f"\n### Chat relay ({args.runs} runs, {args.streams} concurrent streams, "
        f"LOCAL_API_TOKEN_RATE={server.env['LOCAL_API_TOKEN_RATE']}, "
        f"upstream first token +{args.upstream_ttft:g} ms, sent by {how}"
        f"{', the first send on a new socket' if args.first else ''}"
        f"{f', {args.processes} playground processes on PostgreSQL + Redis' if args.processes > 1 else ''})\n"
    )
    print("| measure | through the playground | direct httpx | added |")
    print("|---|---|---|---|")
    if t:
        print(row(f"time to first token ({how} to first delta)", t["relayed"], t["direct"]))
        print(row(f"{how} to first chunk at the generator", t["to_generator"], t["direct"]))
        print(row("relay hop: first chunk at the generator to the websocket client", t["hop"]))
        print(row(f"{how}: response (`sent` reply) time", [p for p in t["post"] if p is not None]))
    if c:
        print(
            f"| {args.streams} concurrent streams: chunks/s | {c['relay_chunks_per_s']:.0f} "
            f"({c['relay_seconds']:.1f} s) | {c['direct_chunks_per_s']:.0f} ({c['direct_seconds']:.1f} s) | "
            f"{c['relay_chunks_per_s'] / c['direct_chunks_per_s']:.0%} of direct |"
        )
        print(
            f"| websocket messages for {c['upstream_chunks']} upstream chunks | {c['ws_messages']} "
            f"(coalesced) | — | errors: {sum(c['errors'].values())} |"
        )
        print(row(f"relay hop under {args.streams} streams, every delta (includes coalescing)", c["hops"]))
        if args.processes > 1:
            tabs = f"{args.observers} x {args.observer_tabs} tab(s) on another process than the generation"
            tabs += f", {len(c['cross_hops'])} deltas"
            print(row(f"the same, {tabs}", c["cross_hops"]))
            print(row("  behind the generating process's tab, delta by delta", c["behind"]))
            names = ("chunk -> outbox", "outbox wait", "push -> popped", "popped -> tab")
            for index, name in enumerate(names):
                print(row(f"  of which {name}", [step[index] for step in c["steps"]]))
        print(
            f"| playground RSS | idle {c['idle_rss_mb']:.0f} MB, {args.streams} sockets "
            f"{c['connected_rss_mb']:.0f} MB, peak {c['peak_rss_mb']:.0f} MB | — | "
            f"{c['rss_per_stream_kb']:.0f} KB per stream |"
        )
        chunks = c["upstream_chunks"] / 1000
        cpu = ", ".join(f"{name} {seconds / chunks * 1000:.0f} ms" for name, seconds in c["cpu"].items())
        busy, total = c["machine"]
        kinds = ", ".join(f"{kind} {count}" for kind, count in c["kinds"].most_common())
        print(f"| CPU per 1,000 chunks | {cpu} | machine busy {busy / total:.0%} | messages: {kinds} |")
        for words, count in c["errors"].most_common():
            print(f"\nstreams ended by {words!r}: {count}")


if __name__ == "__main__":
    main()
