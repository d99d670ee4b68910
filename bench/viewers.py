"""Many viewers following one stream: how far behind the first viewer each of the others receives every delta.

Run by hand: `.venv/bin/python bench/viewers.py [--viewers 20] [--runs 5] [--mode tabs|share] [--rate 200]`. Same two daphne
processes as bench/relay.py (the upstream local API pacing --rate tokens a second, and the playground, SQLite,
in-memory channel layer). `tabs`: N websockets of the owner on the conversation; `share`: N anonymous viewers of
a live share link of it. Each run sends one turn ("write 300 words") with the chat:send POST and records, for
every viewer, when it first held the answer up to each sequence number (a delta or a snapshot reaching it).
The spread of a sequence number is the last viewer's time minus the first viewer's. Upstream work: the
generations the turns started (one per turn, whatever the number of viewers), counted from the `done` events.
Prints a markdown table.
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

import httpx
import websockets

sys.path.insert(0, str(Path(__file__).resolve().parent))
from relay import SETUP, Server, pct, send, ws_connect

SHARE = """
from playground.sharing.freeze import freeze
from playground.sharing.models import Share
conversation = Conversation.objects.get(pk=ids[0])
share = Share.objects.create(owner=user, kind=Share.CONVERSATION, conversation=conversation, title="bench", live=True)
freeze(share)
print(json.dumps({"session": session.session_key, "conversations": ids, "token": share.token}))
"""


class ViewersServer(Server):
    def __init__(self):
        import relay

        relay.SETUP = SETUP.replace(
            'print(json.dumps({"session": session.session_key, "conversations": ids}))', SHARE.strip()
        )
        try:
            super().__init__(count=1)
        finally:
            relay.SETUP = SETUP

    def viewer(self, mode: str):
        if mode == "tabs":
            return ws_connect(self, self.conversations[0])
        return websockets.connect(
            f"ws://127.0.0.1:{self.port}/ws/s/{self.share_token}/", additional_headers={"Origin": self.url}
        )


async def watch(ws, start: float, reached: dict, lags: list[float]) -> int | None:
    """Record when this viewer first held each sequence number (the final render holds them all, under the key
    "done"); returns the message id of the `done`."""
    held = 0
    while True:
        event = json.loads(await ws.recv())
        kind = event.get("type")
        now = (time.perf_counter() - start) * 1000
        if kind == "delta" and event.get("t") is not None:
            lags.append((time.time() - event["t"]) * 1000)
        if kind in ("delta", "snapshot") and event.get("seq", 0) > held:
            for seq in range(held + 1, event["seq"] + 1):
                reached[seq] = now
            held = event["seq"]
        if kind in ("done", "error"):
            reached["done"] = now
            return event.get("message_id") if kind == "done" else None


async def one_turn(server: ViewersServer, mode: str, viewers: int) -> dict:
    pk = server.conversations[0]
    sockets = [await server.viewer(mode).__aenter__() for _ in range(viewers)]
    try:
        if mode == "share":
            for ws in sockets:
                await ws.send(json.dumps({"type": "since", "after": 0}))
        await asyncio.sleep(0.2)  # every socket joined its groups
        reached, lags = [{} for _ in sockets], []
        start = time.perf_counter()
        watchers = [asyncio.create_task(watch(ws, start, r, lags)) for ws, r in zip(sockets, reached, strict=True)]
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
            await send(http, server, pk, "write 300 words about mountains")
        done = await asyncio.wait_for(asyncio.gather(*watchers), 60)
    finally:
        for ws in sockets:
            await ws.close()
    seqs = set().union(*(set(r) for r in reached))
    spreads = []
    for s in seqs:
        times = [r.get(s, r["done"]) for r in reached]
        spreads.append(max(times) - min(times))
    return {"spreads": spreads, "lags": lags, "generations": len(set(done) - {None}), "complete": all(done)}


async def bench(server: ViewersServer, mode: str, viewers: int, runs: int) -> dict:
    spreads, lags, generations, complete = [], [], 0, True
    for i in range(runs + 1):
        result = await one_turn(server, mode, viewers)
        if i == 0:
            continue  # warm-up
        spreads += result["spreads"]
        lags += result["lags"]
        generations += result["generations"]
        complete = complete and result["complete"]
    return {"spreads": spreads, "lags": lags, "generations": generations, "complete": complete}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--viewers", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mode", choices=("tabs", "share", "both"), default="both")
    parser.add_argument("--rate", type=int, default=200, help="upstream tokens per second (0: all at once)")
    args = parser.parse_args()
    os.environ["RELAY_BENCH_TOKEN_RATE"] = str(args.rate)
    server = ViewersServer()
    modes = ("tabs", "share") if args.mode == "both" else (args.mode,)
    results = {}
    try:
        server.share_token = server.setup["token"]
        for mode in modes:
            results[mode] = asyncio.run(bench(server, mode, args.viewers, args.runs))
    finally:
        server.close()
    print(f"\n### {args.viewers} viewers following one stream ({args.runs} turns each, {args.rate} tokens/s)\n")
    print(
        "| viewers | spread behind the first viewer, every sequence number: p50 / p95 / max "
        "| upstream chunk to viewer, every delta: p50 / p95 | generations |"
    )
    print("|---|---|---|---|")
    for mode, r in results.items():
        s = r["spreads"]
        print(
            f"| {args.viewers} {'owner tabs' if mode == 'tabs' else 'share viewers'} | "
            f"{statistics.median(s):.1f} / {pct(s, 0.95):.1f} / {max(s):.1f} ms | "
            f"{statistics.median(r['lags'] or [0]):.1f} / {pct(r['lags'] or [0], 0.95):.1f} ms | "
            f"{r['generations']} for {args.runs} turns{'' if r['complete'] else ' (some ended in error)'} |"
        )


if __name__ == "__main__":
    main()
