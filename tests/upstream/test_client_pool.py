"""The upstream client keeps its connections: a streamed answer read to its [DONE] gives its connection back to
the pool, so the next request is written at once instead of connecting (and, to a provider over TLS, shaking
hands) again."""

import asyncio
import socket
import threading
import time

import anyio
import httpcore
import httpx
import pytest

from playground.upstream import client, network
from tests.fakeprovider.server import CHAT_MODEL

pytestmark = pytest.mark.django_db(transaction=True)


class Counting(httpcore.AsyncNetworkBackend):
    """A network backend that counts the connections opened through it."""

    def __init__(self, inner):
        self.inner, self.opened = inner, 0

    async def connect_tcp(self, *args, **kwargs):
        self.opened += 1
        return await self.inner.connect_tcp(*args, **kwargs)

    async def sleep(self, seconds):
        await self.inner.sleep(seconds)


def counted(trusted: bool) -> Counting:
    pool = client.get_client(trusted)._transport._pool
    pool._network_backend = Counting(pool._network_backend)
    return pool._network_backend


async def answer(endpoint: client.Endpoint, model: str, words: int) -> str:
    body = {"model": model, "messages": [{"role": "user", "content": f"write {words} words about rivers"}]}
    text = []
    async with client.chat_stream(endpoint, body) as stream:
        async for chunk in stream:
            for choice in chunk.get("choices") or []:
                text.append(choice["delta"].get("content") or "")
    assert stream.done
    return "".join(text)


async def three_answers_one_connection(endpoint: client.Endpoint, model: str) -> None:
    await client.close_clients()
    backend = counted(endpoint.trusted)
    try:
        for words in (5, 40, 5):
            assert await answer(endpoint, model, words)
        assert backend.opened == 1
    finally:
        await client.close_clients()


@pytest.mark.needs_local_api
@pytest.mark.parametrize("trusted", [True, False], ids=["local", "checked-address"])
async def test_the_local_apis_answers_one_after_another_share_one_connection(live_server, trusted):
    endpoint = client.Endpoint(base_url=live_server.api_url, api_key=live_server.api_key, trusted=trusted)
    await three_answers_one_connection(endpoint, "local/chat")


async def test_an_openai_style_providers_answers_share_one_connection(fake_openai, settings):
    settings.ALLOWED_UPSTREAM_HOSTS = ["127.0.0.1"]
    endpoint = client.Endpoint(base_url=fake_openai.base_url, api_key=fake_openai.key, trusted=False)
    await three_answers_one_connection(endpoint, CHAT_MODEL)


def _one_response_then_close(server: socket.socket, accepted: list) -> None:
    """A keep-alive server that answers one request per connection, then closes it while the client holds it idle."""
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        accepted.append(conn)
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok")
        time.sleep(0.05)
        conn.close()


async def test_a_kept_connection_the_server_closed_is_not_used_again():
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []
    threading.Thread(target=_one_response_then_close, args=(server, accepted), daemon=True).start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}/"
    await client.close_clients()
    try:
        http = client.get_client(trusted=True)
        for _ in range(3):
            response = await http.get(url)
            assert response.text == "ok"
            await asyncio.sleep(0.2)  # the server has closed the connection the pool keeps
        assert len(accepted) == 3
    finally:
        server.close()
        await client.close_clients()


@pytest.mark.needs_local_api
async def test_an_idle_pooled_connection_asks_its_socket_only(live_server, monkeypatch):
    """httpcore asks every idle connection whether it is readable each time a request starts or ends: that must not
    build anyio's whole set of socket attributes (a getpeername call among them) each time (upstream/network.py)."""
    endpoint = client.Endpoint(base_url=live_server.api_url, api_key=live_server.api_key, trusted=True)
    await client.close_clients()
    try:
        assert await answer(endpoint, "local/chat", 5)
        (connection,) = client.get_client(True)._transport._pool._connections
        stream = connection._connection._network_stream
        anyio_stream = getattr(stream, "_inner", stream)._stream  # httpcore's AnyIOStream holds anyio's
        built = []
        original = type(anyio_stream).extra_attributes
        monkeypatch.setattr(
            type(anyio_stream), "extra_attributes", property(lambda self: built.append(1) or original.fget(self))
        )
        assert [stream.get_extra_info("is_readable") for _ in range(50)] == [False] * 50
        assert built == []
    finally:
        await client.close_clients()


def test_every_client_of_the_process_shares_one_tls_context():
    """Building a TLS context reads the CA bundle (~20 ms): a new event loop's clients, trusted or checked, reuse the
    process's one instead of building their own in their first request (upstream/network.py)."""

    async def contexts():
        try:
            return [client.get_client(trusted)._transport._pool._ssl_context for trusted in (True, False)]
        finally:
            await client.close_clients()

    first, second = asyncio.run(contexts()), asyncio.run(contexts())
    assert first + second == [network.tls()] * 4


@pytest.mark.needs_local_api
async def test_a_streamed_answers_reads_open_no_cancel_scope_of_anyio(live_server, monkeypatch):
    """Each read of a stream (one per chunk, for a paced answer) is timed by a timer on the loop, not by anyio's
    fail_after: its cancel scope asks sniffio which library runs the task, each time (upstream/network.py)."""
    endpoint = client.Endpoint(base_url=live_server.api_url, api_key=live_server.api_key, trusted=True)
    await client.close_clients()
    scopes, fail_after = [], anyio.fail_after
    monkeypatch.setattr(anyio, "fail_after", lambda *args, **kwargs: scopes.append(1) or fail_after(*args, **kwargs))
    reads = []
    read = network.Stream.read

    async def counted_read(self, *args, **kwargs):
        reads.append(1)
        return await read(self, *args, **kwargs)

    monkeypatch.setattr(network.Stream, "read", counted_read)
    try:
        assert len((await answer(endpoint, "local/chat", 60)).split()) >= 50
        assert len(reads) > 5
        assert len(scopes) <= 3  # the connect, the request's headers and body; no read
    finally:
        await client.close_clients()


def _headers_then(server: socket.socket, then: str) -> None:
    """Answer one request with a chunked stream's headers and one chunk, then stall or close mid-body."""
    conn, _ = server.accept()
    conn.recv(65536)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    conn.sendall(b"6\r\ndata: \r\n")
    if then == "close":
        conn.close()
    else:
        time.sleep(2)
        conn.close()


@pytest.mark.parametrize(
    ("then", "error"), [("stall", httpx.ReadTimeout), ("close", httpx.RemoteProtocolError)], ids=["stall", "close"]
)
async def test_a_stream_that_stalls_or_breaks_ends_in_httpxs_own_errors(then, error):
    server = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=_headers_then, args=(server, then), daemon=True).start()
    await client.close_clients()
    try:
        http = client.get_client(trusted=True)
        url = f"http://127.0.0.1:{server.getsockname()[1]}/"
        started = time.perf_counter()
        with pytest.raises(error):
            async with http.stream("GET", url, timeout=httpx.Timeout(5, read=0.3)) as response:
                await response.aread()
        assert time.perf_counter() - started < 1.5
    finally:
        server.close()
        await client.close_clients()
