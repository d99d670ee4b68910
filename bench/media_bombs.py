"""Benchmark: the local API's memory under parallel media bombs.

For each bomb (a 16,000 × 11,000 one-bit PNG of 21 KB, a PDF whose stream inflates to 400 MB, 700 s of audio
and of video without a duration in their header), starts a fresh daphne on a free port (a temporary SQLite
database), warms it with one small image, sends the bomb `--parallel` times at once and samples the server's
RSS every 10 ms. Prints a markdown table: statuses, time, and the RSS growth over the warmed server.

    .venv/bin/python bench/media_bombs.py [--parallel 8] [--root /path/to/a/checkout]

`--root` runs another checkout's server (e.g. main's, for the before figure) with the same bombs.
"""

import argparse
import base64
import importlib.util
import io
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from PIL import Image

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))
from tests.localapi import bombs  # noqa: E402

KEY = "sk-local-bench"


def devserver_of(root: Path):
    spec = importlib.util.spec_from_file_location("devserver_under_test", root / "playground" / "devserver.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def start(devserver, port: int, tmp: Path) -> subprocess.Popen:
    env = devserver.sqlite_env(
        tmp, LOCAL_API_KEYS=KEY, LOCAL_API_RPM="100000", LOCAL_API_TPM="1000000000", PORT=str(port), LOG_LEVEL="ERROR"
    )
    devserver.manage(env, "migrate", "-v0")
    headers = {"Authorization": f"Bearer {KEY}"}
    return devserver.start_daphne(port, env, ready_path="/local/v1/models", headers=headers, timeout=60)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def body(model: str, part: str, mime: str, data: bytes) -> dict:
    url = f"data:{mime};base64,{base64.b64encode(data).decode()}"
    content = [{"type": "text", "text": "Describe this."}, {"type": part, part: {"url": url}}]
    return {"model": model, "messages": [{"role": "user", "content": content}]}


def small_png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 64), (30, 160, 40)).save(out, "PNG")
    return out.getvalue()


BOMBS = {
    "png 16000×11000, 1 bit": lambda: body("local/vision", "image_url", "image/png", bombs.pixel_png()),
    "pdf inflating to 400 MB": lambda: body("local/ocr", "image_url", "application/pdf", bombs.inflating_pdf()),
    "audio 700 s, no duration": lambda: body("local/omni", "audio_url", "audio/x-matroska", bombs.headerless_audio()),
    "video 700 s, no duration": lambda: body("local/omni", "video_url", "video/x-matroska", bombs.headerless_video()),
}


def run(devserver, name: str, request: dict, parallel: int) -> dict:
    port = devserver.free_port()
    with tempfile.TemporaryDirectory() as tmp:
        process = start(devserver, port, Path(tmp))
        url = f"http://127.0.0.1:{port}/local/v1/chat/completions"
        headers = {"Authorization": f"Bearer {KEY}"}
        try:
            with httpx.Client(headers=headers, timeout=600) as client:
                warm = client.post(url, json=body("local/vision", "image_url", "image/png", small_png()))
                assert warm.status_code == 200, warm.text
                time.sleep(1)
                baseline = rss_mb(process.pid)
                peak, done = baseline, threading.Event()

                def sample():
                    nonlocal peak
                    while not done.is_set():
                        peak = max(peak, rss_mb(process.pid))
                        time.sleep(0.01)

                sampler = threading.Thread(target=sample)
                sampler.start()
                started = time.perf_counter()
                with ThreadPoolExecutor(parallel) as pool:
                    responses = list(pool.map(lambda _: client.post(url, json=request), range(parallel)))
                elapsed = time.perf_counter() - started
                done.set()
                sampler.join()
        finally:
            devserver.stop(process)
    statuses = sorted({r.status_code for r in responses})
    words = responses[0].json().get("message", "")[:90] if responses[0].status_code != 200 else "(answered)"
    return {
        "bomb": name,
        "statuses": "/".join(map(str, statuses)),
        "elapsed": elapsed,
        "baseline": baseline,
        "growth": peak - baseline,
        "words": words,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--root", type=Path, default=HERE)
    parser.add_argument("--only", help="run the bombs whose name contains this")
    args = parser.parse_args()
    devserver = devserver_of(args.root.resolve())
    rows = [
        run(devserver, name, make(), args.parallel)
        for name, make in BOMBS.items()
        if not args.only or args.only in name
    ]
    print(f"\n{args.parallel} parallel requests per bomb, server at {args.root.resolve()}\n")
    print("| bomb | status | time | RSS warmed | RSS growth | first answer |")
    print("|---|---|---:|---:|---:|---|")
    for row in rows:
        print(
            f"| {row['bomb']} | {row['statuses']} | {row['elapsed']:.2f} s | {row['baseline']:.0f} MB "
            f"| {row['growth']:+.0f} MB | {row['words']} |"
        )


if __name__ == "__main__":
    main()
