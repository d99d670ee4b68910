"""What a load balancer's probes and a Prometheus scrape cost: /health/live, /health/ready and /metrics.

Run by hand: `.venv/bin/python bench/probes.py [--runs 300]`. One daphne on a fresh SQLite database in a temporary
directory (migrated first), metrics on with a token; each path gets 20 warm-up GETs, then `--runs` sequential GETs
over one keep-alive connection, timed from the client (loopback).
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from playground import devserver

TOKEN = "bench-metrics-token"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        env = devserver.sqlite_env(directory, PLAYGROUND_METRICS_TOKEN=TOKEN)
        devserver.manage(env, "migrate", "--noinput", stdout=-3)
        port = devserver.free_port()
        process = devserver.start_daphne(port, {**env, "PORT": str(port)})
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
                for path in ("/health/live", "/health/ready", "/metrics"):
                    headers = {"Authorization": f"Bearer {TOKEN}"} if path == "/metrics" else {}
                    for _ in range(20):
                        client.get(path, headers=headers)
                    times = []
                    for _ in range(args.runs):
                        started = time.perf_counter()
                        response = client.get(path, headers=headers)
                        times.append((time.perf_counter() - started) * 1000)
                        response.raise_for_status()
                    times.sort()
                    p95 = times[int(len(times) * 0.95)]
                    print(
                        f"{path}: median {statistics.median(times):.1f} ms, p95 {p95:.1f} ms, {len(response.content)} B"
                    )
        finally:
            devserver.stop(process)


if __name__ == "__main__":
    main()
