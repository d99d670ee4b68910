"""Benchmark: 100 concurrent streaming chat completions against the local API, unpaced.

Starts its own daphne on a free port (LOCAL_API_TOKEN_RATE=0, a temporary SQLite database, migrated
first), runs the streams, stops the server and prints a markdown table.

    .venv/bin/python bench/localapi_chat.py [--streams 100] [--words 200]
"""

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from playground import devserver

KEY = "sk-local-bench"


def start(port: int, tmp: Path) -> subprocess.Popen:
    env = devserver.sqlite_env(
        tmp,
        LOCAL_API_KEYS=KEY,
        LOCAL_API_TOKEN_RATE="0",
        LOCAL_API_RPM="100000",
        LOCAL_API_TPM="1000000000",
        PORT=str(port),
        LOG_LEVEL="WARNING",
    )
    devserver.manage(env, "migrate", "-v0")
    return devserver.start_daphne(port, env, ready_path="/local/v1/models", headers={"Authorization": f"Bearer {KEY}"})


async def one_stream(client: httpx.AsyncClient, url: str, words: int, index: int) -> tuple[int, list[float], float]:
    body = {
        "model": "local/chat",
        "stream": True,
        "messages": [{"role": "user", "content": f"write {words} words about topic {index}"}],
    }
    gaps, chunks = [], 0
    started = time.perf_counter()
    async with client.stream("POST", url, json=body) as response:
        response.raise_for_status()
        last = None
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            now = time.perf_counter()
            if last is not None:
                gaps.append(now - last)
            last = now
            chunks += 1
    return chunks, gaps, time.perf_counter() - started


async def run(port: int, streams: int, words: int) -> dict:
    url = f"http://127.0.0.1:{port}/local/v1/chat/completions"
    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}, timeout=120, limits=limits) as client:
        await one_stream(client, url, 20, -1)  # warm-up
        started = time.perf_counter()
        results = await asyncio.gather(*(one_stream(client, url, words, i) for i in range(streams)))
        elapsed = time.perf_counter() - started
    total_chunks = sum(r[0] for r in results)
    gaps = sorted(g for r in results for g in r[1])
    durations = sorted(r[2] for r in results)
    return {
        "streams": streams,
        "chunks": total_chunks,
        "elapsed": elapsed,
        "chunks_per_s": total_chunks / elapsed,
        "p50_gap_ms": statistics.median(gaps) * 1000,
        "p99_gap_ms": gaps[int(len(gaps) * 0.99) - 1] * 1000,
        "max_gap_ms": gaps[-1] * 1000,
        "p50_stream_s": statistics.median(durations),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--words", type=int, default=200)
    args = parser.parse_args()
    port = devserver.free_port()
    with tempfile.TemporaryDirectory() as tmp:
        process = start(port, Path(tmp))
        try:
            result = asyncio.run(run(port, args.streams, args.words))
        finally:
            devserver.stop(process)
    print(f"Local API chat streaming, {result['streams']} concurrent streams of ~{args.words} words, unpaced\n")
    print(
        "| streams | chunks | wall time (s) | chunks/s | p50 gap (ms) | p99 gap (ms) | max gap (ms) | p50 stream (s) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {result['streams']} | {result['chunks']} | {result['elapsed']:.2f} | {result['chunks_per_s']:.0f} "
        f"| {result['p50_gap_ms']:.2f} | {result['p99_gap_ms']:.2f} | {result['max_gap_ms']:.1f} "
        f"| {result['p50_stream_s']:.2f} |"
    )


if __name__ == "__main__":
    main()
