"""The upstream client keeps its connections: a streamed answer read to its [DONE] gives its connection back to
the pool, so the next request is written at once instead of connecting (and, to a provider over TLS, shaking
hands) again."""

import asyncio
import contextlib
import datetime
import ipaddress
import socket
import ssl
import threading
import time

import anyio
import httpcore
import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

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
    """httpcore asks every idle connection whether it is readable each time a request starts or ends: one `poll` of
    its socket, no attribute lookups of the transport beyond the socket (upstream/network.py)."""
    endpoint = client.Endpoint(base_url=live_server.api_url, api_key=live_server.api_key, trusted=True)
    await client.close_clients()
    try:
        assert await answer(endpoint, "local/chat", 5)
        (connection,) = client.get_client(True)._transport._pool._connections
        stream = connection._connection._network_stream
        asked, get_extra_info = [], stream._transport.get_extra_info
        monkeypatch.setattr(
            stream._transport, "get_extra_info", lambda name, *default: asked.append(name) or get_extra_info(name)
        )
        assert [stream.get_extra_info("is_readable") for _ in range(50)] == [False] * 50
        assert set(asked) == {"socket"}
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
async def test_a_streamed_answers_reads_leave_the_sockets_reading_as_it_is(live_server, monkeypatch):
    """Each read of a stream (one per chunk, for a paced answer) takes what the connection has buffered: it neither
    resumes nor pauses the socket's reading (two selector changes a chunk, anyio's way), nor opens anyio's cancel
    scope, whose every use asks sniffio which library runs the task (upstream/network.py)."""
    endpoint = client.Endpoint(base_url=live_server.api_url, api_key=live_server.api_key, trusted=True)
    await client.close_clients()
    scopes, fail_after = [], anyio.fail_after
    monkeypatch.setattr(anyio, "fail_after", lambda *args, **kwargs: scopes.append(1) or fail_after(*args, **kwargs))
    reads, switches = [], []
    read = network.Stream.read

    async def counted_read(self, *args, **kwargs):
        reads.append(1)
        return await read(self, *args, **kwargs)

    monkeypatch.setattr(network.Stream, "read", counted_read)
    for name in ("pause_reading", "resume_reading"):
        original = getattr(asyncio.selector_events._SelectorTransport, name)
        monkeypatch.setattr(
            asyncio.selector_events._SelectorTransport,
            name,
            lambda self, original=original, name=name: switches.append(name) or original(self),
        )
    try:
        assert len((await answer(endpoint, "local/chat", 60)).split()) >= 50
        assert len(reads) > 5
        assert scopes == []
        assert switches == []
    finally:
        await client.close_clients()


async def test_a_reader_that_falls_behind_pauses_the_connection_until_it_reads():
    """A connection reads ahead of httpcore's reads only up to HIGH_WATER bytes: then it stops reading from the
    socket (the sender is held back by TCP) until the reads take the buffer below LOW_WATER."""
    body = b"x" * (4 * network.HIGH_WATER)

    async def serve(reader, writer):
        writer.write(body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        stream = await network.Backend().connect_tcp("127.0.0.1", server.sockets[0].getsockname()[1], timeout=5)
        protocol = stream._protocol
        deadline = time.monotonic() + 5
        while not protocol.paused and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert protocol.paused
        assert protocol.unread <= network.HIGH_WATER + 65536 * 4
        received = []
        while data := await stream.read(65536, timeout=5):
            assert len(data) <= 65536
            received.append(data)
        assert b"".join(received) == body
        assert not protocol.paused
        await stream.aclose()
    finally:
        server.close()


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


def _self_signed(tmp_path) -> tuple[str, str]:
    """A certificate for 127.0.0.1 signed by its own key, and the key: (cert path, key path)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_path), str(key_path)


async def test_a_stream_over_tls_is_read_whole_and_a_wrong_certificate_refused(tmp_path):
    """The connection shakes hands over asyncio's TLS (start_tls after the connect, as httpcore asks for https):
    a streamed answer is read to its end on a kept connection, and a certificate the context does not trust is
    httpx's ConnectError."""
    cert, key = _self_signed(tmp_path)
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)
    events = [f"data: {n}\n\n".encode() for n in range(200)]

    async def serve(reader, writer):
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            await answer_each_request(reader, writer)

    async def answer_each_request(reader, writer):
        while (await reader.readuntil(b"\r\n\r\n")).startswith(b"GET"):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            for event in events:
                writer.write(b"%x\r\n%s\r\n" % (len(event), event))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=served)
    url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    trusting = ssl.create_default_context(cafile=cert)
    try:
        async with httpx.AsyncClient(transport=network.install(httpx.AsyncHTTPTransport(verify=trusting))) as http:
            for _ in range(2):
                async with http.stream("GET", url) as response:
                    assert b"".join([part async for part in response.aiter_bytes()]) == b"".join(events)
            (connection,) = http._transport._pool._connections
            assert connection._connection._network_stream.get_extra_info("ssl_object") is not None
        async with httpx.AsyncClient(transport=network.install(httpx.AsyncHTTPTransport(verify=network.tls()))) as http:
            with pytest.raises(httpx.ConnectError):
                await http.get(url)
    finally:
        server.close()


async def test_reads_that_wait_share_one_watchdog_timer_and_a_silence_still_times_out(monkeypatch):
    """A paced stream's reads each wait for their chunk: they move the connection's deadline instead of setting and
    cancelling a timer each (upstream/network.py, Protocol.wait_for_data); past the deadline the read fails."""

    async def serve(reader, writer):
        for _ in range(30):
            writer.write(b"x")
            await asyncio.sleep(0.005)
        await asyncio.sleep(1)
        writer.close()

    loop = asyncio.get_running_loop()
    timers, call_at = [], loop.call_at
    monkeypatch.setattr(
        loop,
        "call_at",
        lambda when, callback, *args, **kwargs: (
            (timers.append(callback) if getattr(callback, "__func__", None) is network.Protocol._watch else None)
            or call_at(when, callback, *args, **kwargs)
        ),
    )
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        stream = await network.Backend().connect_tcp("127.0.0.1", server.sockets[0].getsockname()[1], timeout=5)
        received = b""
        while len(received) < 30:
            received += await stream.read(65536, timeout=0.3)
        assert len(timers) == 1
        started = time.perf_counter()
        with pytest.raises(httpcore.ReadTimeout):
            await stream.read(65536, timeout=0.3)
        assert 0.25 < time.perf_counter() - started < 0.9
        await stream.aclose()
    finally:
        server.close()
