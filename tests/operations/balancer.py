"""Debian's HAProxy with the repository's own configuration (deploy/haproxy.cfg) in front of daphne processes, and
those processes on fixed ports so that each can be restarted in place (tests/operations/test_rolling_restart.py)."""

import csv
import io
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from playground import devserver
from tests.conftest import free_port, server_env

CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "haproxy.cfg"


def haproxy_path() -> str:
    found = shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None)
    if found is None:
        message = "HAProxy is missing (run `make balancer` as root to install Debian's)."
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass
class Balancer:
    port: int
    stats_port: int
    process: subprocess.Popen
    log: Path

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def stats(self) -> list[dict]:
        text = httpx.get(f"http://127.0.0.1:{self.stats_port}/stats;csv", timeout=5).text
        return list(csv.DictReader(io.StringIO(text.lstrip("# "))))

    def server_status(self) -> dict[str, str]:
        return {row["svname"]: row["status"] for row in self.stats() if row["pxname"] == "daphne"}

    def responses_5xx(self) -> int:
        """Responses >= 500 that the clients got from the balancer (its own and the processes')."""
        row = next(r for r in self.stats() if r["pxname"] == "playground" and r["svname"] == "FRONTEND")
        return int(row["hrsp_5xx"] or 0)

    def errors(self) -> list[str]:
        """The requests HAProxy logged as errors (option log-separate-errors): status >= 500, retries, aborts."""
        lines = self.log.read_text(errors="replace").splitlines()
        return [line for line in lines if " playground " in line and "/" in line.split(" playground ", 1)[1][:40]]

    def wait_up(self, name: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while self.server_status().get(name, "").split(" ")[0] != "UP":
            if time.monotonic() > deadline:
                raise AssertionError(f"{name} is not up at the balancer: {self.server_status()}")
            time.sleep(0.1)


def start_balancer(web: list[int], log: Path) -> Balancer:
    port, stats_port = free_port(), free_port()
    env = {
        **os.environ,
        "PLAYGROUND_BIND": f"127.0.0.1:{port}",
        "PLAYGROUND_STATS_BIND": f"127.0.0.1:{stats_port}",
        **{f"PLAYGROUND_WEB{i}": f"127.0.0.1:{p}" for i, p in enumerate(web, start=1)},
    }
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [haproxy_path(), "-db", "-f", str(CONFIG)], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + 10
    while not (_listening(port) and _listening(stats_port)):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"haproxy did not start; see {log}")
        time.sleep(0.05)
    return Balancer(port, stats_port, process, log)


@dataclass
class Fleet:
    """Daphne processes on fixed ports with the same environment; `restart(i)` is SIGTERM, wait, start again."""

    logs: Path
    extra: dict
    ports: list[int] = field(default_factory=list)
    processes: list[subprocess.Popen] = field(default_factory=list)

    def start(self, count: int) -> None:
        for _ in range(count):
            self.ports.append(free_port())
            self.processes.append(self._start(len(self.ports) - 1))

    def _start(self, index: int) -> subprocess.Popen:
        port = self.ports[index]
        log = self.logs / f"daphne-{index + 1}.log"
        return devserver.start_daphne(port, server_env(port, **self.extra), log=log, backlog=1024, timeout=60)

    def log(self, index: int) -> str:
        return (self.logs / f"daphne-{index + 1}.log").read_text(errors="replace")

    def terminate(self, index: int) -> None:
        self.processes[index].send_signal(signal.SIGTERM)

    def wait_exit(self, index: int, timeout: float) -> int:
        return self.processes[index].wait(timeout=timeout)

    def start_again(self, index: int) -> None:
        self.processes[index] = self._start(index)

    def stop(self) -> None:
        devserver.stop(*(p for p in self.processes if p.poll() is None))
