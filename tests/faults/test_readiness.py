"""The load balancer's probes under a live daphne: readiness goes unready (503, naming what failed) when Redis or
the database stops, and ready again when it is back; liveness stays 200 throughout. Redis is this test's own
redis-server; the database is reached through a TCP relay of this test's own, which it closes and reopens (the
shared servers are never stopped)."""

import socket
import threading

import httpx
import pytest
from cryptography.fernet import Fernet
from django.conf import settings
from django.db import connection

from playground.connections.models import Connection
from tests.conftest import free_port
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def probe(server, path: str = "/health/ready") -> httpx.Response:
    return httpx.get(f"{server.url}{path}", timeout=10)


def test_readiness_follows_redis_stopping_and_coming_back(servers, own_redis):
    server = servers(REDIS_URL=own_redis.url)
    ready = probe(server)
    assert ready.status_code == 200
    assert ready.json() == {
        "status": "ready",
        "checks": {"database": "ok", "encryption": "ok", "channel_layer": "ok"},
    }

    own_redis.kill()
    down = wait_for(lambda: (r := probe(server)).status_code == 503 and r, timeout=10, what="unready")
    assert down.json()["status"] == "unready"
    assert down.json()["checks"]["channel_layer"].startswith("unreachable")
    assert down.json()["checks"]["database"] == "ok"
    assert probe(server, "/health/live").status_code == 200

    own_redis.restart()
    wait_for(lambda: probe(server).status_code == 200, timeout=15, what="ready again")


class Relay:
    """A TCP relay to the database that can be cut (the listener closed, every connection dropped) and reopened."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.port = free_port()
        self.sockets: list[socket.socket] = []
        self.ports: set[int] = set()  # the relay's own ends of its connections to the database
        self.listener: socket.socket | None = None

    def open(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def cut(self) -> None:
        self.listener.close()
        for sock in self.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self.sockets.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            self.ports.add(upstream.getsockname()[1])
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                try:
                    sock.close()
                except OSError:
                    pass


@pytest.mark.skipif(
    not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"), reason="needs PostgreSQL (DATABASE_URL)"
)
def test_readiness_follows_the_database_stopping_and_coming_back(servers):
    db = settings.DATABASES["default"]
    relay = Relay((db.get("HOST") or "127.0.0.1", int(db.get("PORT") or 5432)))
    relay.open()
    user = db.get("USER") or "postgres"
    try:
        server = servers(DATABASE_URL=f"postgres://{user}@127.0.0.1:{relay.port}/{db['NAME']}")
        assert probe(server).status_code == 200

        relay.cut()
        down = wait_for(lambda: (r := probe(server)).status_code == 503 and r, timeout=10, what="unready")
        assert down.json()["checks"]["database"] != "ok"
        assert probe(server, "/health/live").status_code == 200

        relay.open()
        wait_for(lambda: probe(server).status_code == 200, timeout=30, what="ready again")
    finally:
        relay.cut()
        _end_sessions_from(relay.ports)


def _end_sessions_from(ports: set[int]) -> None:
    """End the database sessions the relay carried (the test database is dropped after the test)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
            "WHERE datname = current_database() AND client_port = ANY(%s)",
            [list(ports)],
        )


def test_readiness_is_unready_while_stored_keys_cannot_be_decrypted(alice, servers):
    server = servers()
    assert probe(server).status_code == 200
    connection = Connection.objects.create(owner=alice, name="Old", base_url="https://api.example.com/v1")
    stranger = Fernet(Fernet.generate_key()).encrypt(b"sk-under-a-lost-key").decode()
    Connection.objects.filter(pk=connection.pk).update(encrypted_key=stranger)

    stored = Connection.objects.exclude(encrypted_key="").count()  # with the Local connection's key, if any

    response = probe(server)
    assert response.status_code == 503
    assert response.json()["checks"]["encryption"] == (
        f"1 of {stored} stored API keys cannot be decrypted with the configured keys"
    )
    assert "sk-" not in response.text
