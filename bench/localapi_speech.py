"""Benchmark of streamed speech from the local API (run by hand: `.venv/bin/python bench/localapi_speech.py`).

Starts its own daphne on a free port with a temporary SQLite database (migrated first) and measures:
- time to the first audio byte vs the total time for a 2,000-character input (stream true);
- the server's peak RSS (VmHWM) while streaming a 10,000- and a 100,000-character input, each on a fresh
  server process: with sentence-by-sentence synthesis and a bounded queue it should stay flat.
Prints a markdown table.
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from playground import devserver

KEY = "sk-local-bench"
WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "while",
    "seven",
    "wise",
    "owls",
    "watch",
    "from",
    "an",
    "old",
    "oak",
    "tree",
    "near",
    "the",
    "quiet",
    "river",
    "and",
    "a",
    "small",
    "boat",
    "drifts",
    "slowly",
    "past",
    "green",
    "fields",
    "under",
    "a",
    "pale",
    "morning",
    "sky",
]


def text_of(length: int) -> str:
    sentences, i = [], 0
    while sum(len(s) + 1 for s in sentences) < length:
        words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(8 + i % 9)]
        sentences.append(" ".join(words).capitalize() + ".")
        i += 1
    return " ".join(sentences)[:length]


def start(tmp: Path) -> tuple[subprocess.Popen, str]:
    port = devserver.free_port()
    env = devserver.sqlite_env(tmp, LOCAL_API_KEYS=KEY, LOCAL_API_TPM="0", LOCAL_API_RPM="0")
    process = devserver.start_daphne(
        port, env, ready_path="/local/v1/models", headers={"Authorization": f"Bearer {KEY}"}
    )
    return process, f"http://127.0.0.1:{port}/local/v1"


def status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def stream(url: str, text: str, response_format: str) -> tuple[float, float, int]:
    """(seconds to the first byte, total seconds, bytes) of one streamed request."""
    started = time.monotonic()
    first, size = None, 0
    body = {"model": "local/tts", "input": text, "response_format": response_format, "max_tokens": 1}
    with httpx.stream(
        "POST", f"{url}/audio/speech", json=body, headers={"Authorization": f"Bearer {KEY}"}, timeout=None
    ) as response:
        response.raise_for_status()
        for chunk in response.iter_raw():
            if first is None:
                first = time.monotonic() - started
            size += len(chunk)
    return first or 0.0, time.monotonic() - started, size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--format", default="mp3", choices=["mp3", "opus", "wav", "pcm"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        devserver.manage(devserver.sqlite_env(tmp), "migrate", "-v0")
        rows = []
        for length in (2_000, 10_000, 100_000):
            process, url = start(tmp)
            try:
                baseline = status_kb(process.pid, "VmHWM")
                first, total, size = stream(url, text_of(length), args.format)
                peak = status_kb(process.pid, "VmHWM")
            finally:
                devserver.stop(process)
            rows.append((length, first, total, size, baseline, peak))
    print(f"\nStreamed speech, format {args.format}, one fresh daphne per row\n")
    print("| input chars | first byte (s) | total (s) | audio bytes | RSS peak before (MB) | RSS peak after (MB) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for length, first, total, size, baseline, peak in rows:
        print(f"| {length:,} | {first:.3f} | {total:.2f} | {size:,} | {baseline / 1024:.1f} | {peak / 1024:.1f} |")


if __name__ == "__main__":
    main()
