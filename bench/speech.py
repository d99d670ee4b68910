"""Speech relay benchmark (run by hand: `.venv/bin/python bench/speech.py`).

Starts its own daphne on a free port with a temporary SQLite database (migrated and seeded first), logs a
user in, and measures:
- time to the first audio byte of a 2,000-character clip through the playground (POST /speech/clips/, then
  GET the clip's stream) vs. straight from the local API (POST /local/v1/audio/speech), in the same run;
- the server's peak RSS (VmHWM) after relaying a 10,000- and a 100,000-character clip, each on a fresh server
  process. The local API synthesizes in that same process, so the figure covers both sides of the relay.
Prints a markdown table.
"""

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from playground import devserver

KEY = "sk-local-bench-speech"
PASSWORD = "bench-speech-password-1"
SENTENCE = "[S1] The quick brown fox jumps over the lazy dog near the river. [S2] Really, tell me more about that! "


def text(length: int) -> str:
    return (SENTENCE * (length // len(SENTENCE) + 1))[:length]


class Server:
    def __init__(self, workdir: Path):
        self.port = devserver.free_port()
        self.env = devserver.sqlite_env(
            workdir,
            LOCAL_API_KEYS=KEY,
            LOCAL_API_TOKEN_RATE="0",
            PORT=str(self.port),
            LOCAL_API_BASE_URL=f"http://127.0.0.1:{self.port}/local/v1",
        )
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = None

    def manage(self, *args: str) -> None:
        devserver.manage(self.env, *args, stdout=subprocess.DEVNULL)

    def setup(self) -> None:
        self.manage("migrate", "--noinput")
        self.manage("seed_catalog")
        self.manage(
            "shell",
            "-c",
            "from django.contrib.auth.models import User; "
            f"User.objects.filter(username='bench').exists() or User.objects.create_user('bench', '', '{PASSWORD}')",
        )

    def start(self) -> None:
        self.process = devserver.start_daphne(self.port, self.env)

    def stop(self) -> None:
        devserver.stop(self.process)

    def peak_rss_mb(self) -> float:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024

    def session(self) -> httpx.Client:
        http = httpx.Client(base_url=self.url, timeout=600)
        http.get("/accounts/login/")
        response = http.post(
            "/accounts/login/",
            data={"username": "bench", "password": PASSWORD, "csrfmiddlewaretoken": http.cookies["csrftoken"]},
        )
        assert response.status_code == 302, response.text[:500]
        page = http.get("/speech/").text
        http.headers["X-CSRFToken"] = http.cookies["csrftoken"]
        http.connection_pk = re.search(r'<option value="(\d+)" selected>Local', page).group(1)
        return http


def form(http, length: int, speed: float) -> dict:
    return {
        "connection": http.connection_pk,
        "model": "local/tts",
        "input": text(length),
        "voice": "local/tts:alex",
        "response_format": "mp3",
        "sample_rate": "44100",
        "speed": str(speed),
        "gain": "0",
        "stream": "on",
    }


def through_playground(http, length: int, speed: float) -> tuple[float, float, int]:
    """(seconds to the first audio byte, total seconds, bytes) for one clip through the playground."""
    started = time.perf_counter()
    created = http.post("/speech/clips/", data=form(http, length, speed))
    assert created.status_code == 302, created.text[:500]
    first, size = None, 0
    with http.stream("GET", created.headers["location"] + "stream/") as response:
        for chunk in response.iter_raw():
            if first is None and chunk:
                first = time.perf_counter() - started
            size += len(chunk)
    return first, time.perf_counter() - started, size


def direct(server: Server, length: int, speed: float) -> tuple[float, float, int]:
    body = {
        "model": "local/tts",
        "input": text(length),
        "voice": "local/tts:alex",
        "response_format": "mp3",
        "sample_rate": 44100,
        "speed": speed,
        "gain": 0,
        "stream": True,
    }
    started = time.perf_counter()
    first, size = None, 0
    with httpx.stream(
        "POST",
        f"{server.url}/local/v1/audio/speech",
        json=body,
        timeout=600,
        headers={"Authorization": f"Bearer {KEY}"},
    ) as response:
        for chunk in response.iter_raw():
            if first is None and chunk:
                first = time.perf_counter() - started
            size += len(chunk)
    return first, time.perf_counter() - started, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", type=float, default=4.0, help="speech speed (shorter audio, quicker runs)")
    parser.add_argument("--samples", type=int, default=5, help="first-byte measures of each kind (alternating)")
    parser.add_argument("--no-memory", action="store_true", help="skip the 10,000 and 100,000-character clips")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp))
        server.setup()
        server.start()
        try:
            http = server.session()
            through_playground(http, 200, args.speed)  # warm up: espeak loads its data on first use
            direct(server, 200, args.speed)
            samples = {"direct to the local API": [], "through the playground": []}
            for _ in range(args.samples):  # alternating, so both see the same load
                samples["direct to the local API"].append(direct(server, 2000, args.speed))
                samples["through the playground"].append(through_playground(http, 2000, args.speed))
            firsts = {}
            for label, results in samples.items():
                firsts[label] = sorted(first for first, _, _ in results)
                first, total, size = min(results, key=lambda r: r[0])
                median = firsts[label][len(results) // 2]
                rows.append(
                    f"| first audio byte, 2,000 chars, {label} | {first * 1000:.0f} ms (median {median * 1000:.0f}) | "
                    f"total {total:.2f} s, {size:,} bytes (best of {len(results)}) |"
                )
            direct_firsts, relayed_firsts = (firsts[label] for label in samples)
            # Sorted pairs: best with best, median with median.
            added = [(r - d) * 1000 for d, r in zip(direct_firsts, relayed_firsts, strict=True)]
            rows.append(
                f"| first audio byte added by the playground | {added[0]:+.0f} ms best, "
                f"{added[len(added) // 2]:+.0f} ms median | same run, {args.samples} alternating samples |"
            )
        finally:
            server.stop()
        for length in () if args.no_memory else (10_000, 100_000):
            server.start()
            try:
                http = server.session()
                before = server.peak_rss_mb()
                first, total, size = through_playground(http, length, args.speed)
                rows.append(
                    f"| server peak RSS (VmHWM) relaying {length:,} chars | {server.peak_rss_mb():.0f} MB | "
                    f"{before:.0f} MB before; {size / 1e6:.1f} MB of mp3 in {total:.1f} s |"
                )
            finally:
                server.stop()
    print(f"Speech relay benchmark (speed {args.speed}, mp3 44.1 kHz, voice local/tts:alex)\n")
    print("| measure | value | notes |\n|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
