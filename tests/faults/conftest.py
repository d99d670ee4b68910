"""Fault injection: real daphne processes, each test's own redis-server, and faults dealt from outside
(SIGKILL, a stopped Redis). Every process a test starts is stopped by its fixture, pass or fail."""

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass

import httpx
import pytest
from django.test import Client

from playground import devserver
from playground.chat.models import Conversation
from playground.connections.models import Connection
from tests.conftest import free_port, server_env
from tests.waiting import wait_for  # noqa: F401 (kept importable from here for older imports)

CSRF = "abcdefghijklmnopqrstuvwxyz012345"

needs_redis = pytest.mark.skipif(
    not os.environ.get("REDIS_URL"), reason="needs REDIS_URL: the fault is in the Redis channel layer"
)


@dataclass
class Redis:
    port: int
    process: subprocess.Popen

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def restart(self) -> None:
        """A fresh, empty redis-server on the same port (after `kill()`)."""
        self.process = _start_redis(self.port)


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _start_redis(port: int) -> subprocess.Popen:
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while not _answers_ping(port):
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise RuntimeError("redis-server did not start")
        time.sleep(0.05)
    return process


@pytest.fixture
def own_redis():
    """A redis-server of this test's own on a free port, without persistence, killed at the end."""
    redis = Redis(port := free_port(), _start_redis(port))
    yield redis
    if redis.process.poll() is None:
        redis.kill()


@dataclass
class Server:
    port: int
    process: subprocess.Popen

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


@pytest.fixture
def servers(tmp_path):
    """start(**env) runs a daphne on the test database with that extra environment; all are stopped at the end."""
    started: list[subprocess.Popen] = []

    def start(*, backlog: int | None = None, **extra: str) -> Server:
        port = free_port()
        env = server_env(port, **extra)
        log = tmp_path / f"daphne-{port}.log"
        process = devserver.start_daphne(port, env, log=log, backlog=backlog)
        started.append(process)
        return Server(port, process)

    yield start
    devserver.stop(*(p for p in started if p.poll() is None))
    if os.environ.get("SHOW_SERVER_LOG"):
        for log in tmp_path.glob("daphne-*.log"):
            print(log.read_text(errors="replace"))


def logged_in(user, server: Server, **options) -> httpx.Client:
    """An httpx client with alice's session on `server`, sending htmx and CSRF headers like the page does."""
    client = Client()
    client.force_login(user)
    return httpx.Client(
        base_url=server.url,
        cookies={"sessionid": client.cookies["sessionid"].value, "csrftoken": CSRF},
        headers={"X-CSRFToken": CSRF, "HX-Request": "true"},
        timeout=60,
        **options,
    )


def local_conversation(user, **fields) -> Conversation:
    connection = Connection.objects.get(owner=user, is_local=True)
    return Conversation.objects.create(owner=user, connection=connection, model_id="local/chat", **fields)
