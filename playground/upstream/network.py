"""The upstream client's connections, on asyncio's own transports: cheap to keep in a pool of hundreds, cheap to
read a chunk at a time, and one TLS context for them all.

httpx reaches the network through httpcore's backend, anyio's streams by default. Three of their costs showed in
the relay's profiles (docs/performance.md):
- Each read that waits resumes the socket's reading and pauses it again when data came: two changes of the
  loop's selector (two `epoll_ctl` calls and their bookkeeping) per chunk of a paced stream, about a tenth of the
  relay loop's busy time under 50 paced streams. Here a connection keeps reading; what arrives waits in its
  buffer for the next read, which takes all of it at once, and reading pauses only when more than HIGH_WATER
  bytes wait unread (as asyncio's own StreamReader does).
- Each read went through anyio's `fail_after`, a cancel scope that asks sniffio which library runs the task. Here
  a read that finds data buffered does not wait at all, and one that waits moves its connection's deadline: one
  watchdog timer per connection (`Protocol.wait_for_data`), no timer set and cancelled per read.
- Whenever a request starts or ends, httpcore's pool asks each idle connection whether it is readable (a server
  that closed a kept connection leaves it so); anyio answered by building every attribute of its socket,
  `getpeername` among them. Here the connection answers from its buffer and one `poll` of its socket.

The errors are httpcore's, as its anyio backend raises them; httpx maps them to its own (`httpx.ReadTimeout`...).

Building a TLS context reads the CA bundle (about 20 ms here). Every client (one per event loop and kind, see
client.get_client) shares the process's one, built as the server starts (asgi.py) instead of in a first send.
"""

import asyncio
import contextlib
import functools
import select
import ssl
from collections import deque

import httpcore
import httpx

HIGH_WATER = 256 * 1024  # unread bytes past which a connection stops reading until a read takes them
LOW_WATER = 64 * 1024


@functools.cache
def tls() -> ssl.SSLContext:
    return httpx.create_ssl_context()


def install(transport: httpx.AsyncHTTPTransport) -> httpx.AsyncHTTPTransport:
    """`transport`'s connections made by Backend (the guard's pinned transport takes one as its `network`)."""
    transport._pool._network_backend = Backend()  # httpx has no network_backend option; its httpcore pool has one
    return transport


def readable(sock) -> bool:
    """True when a read would not block: data, or the peer's close (or no socket left to ask)."""
    if sock is None or sock.fileno() < 0:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


@contextlib.asynccontextmanager
async def _within(timeout: float | None, timed_out: type[Exception], failed: type[Exception] | None = None):  # noqa: ASYNC109
    """The body under `timeout` seconds, its expiry raised as httpcore's `timed_out` and a socket's or TLS's
    failure (an OSError) as `failed`, as httpcore's own backends raise them."""
    try:
        async with asyncio.timeout(timeout):
            yield
    except TimeoutError as exc:
        raise timed_out(exc) from exc
    except OSError as exc:
        if failed is None:
            raise
        raise failed(exc) from exc


class Protocol(asyncio.Protocol):
    """One connection's received bytes, kept until read, and its state; wakes the read or write that waits."""

    def __init__(self):
        self.transport: asyncio.Transport | None = None
        self.chunks: deque[bytes] = deque()
        self.unread = 0
        self.paused = False  # reading paused: more than HIGH_WATER bytes unread
        self.ended = False  # the peer's end of stream, or the connection lost
        self.error: Exception | None = None  # why the connection was lost, if not by a clean close
        self.reading: asyncio.Future | None = None
        self.deadline = 0.0  # when the waiting read times out (on the loop's clock)
        self.watchdog: asyncio.TimerHandle | None = None
        self.writing: asyncio.Future | None = None  # a write waiting for the transport's buffer to drain

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.unread += len(data)
        if self.unread > HIGH_WATER and not self.paused:
            self.paused = True
            self.transport.pause_reading()
        self._wake_reading()

    def eof_received(self) -> None:
        self.ended = True
        self._wake_reading()  # returning None closes the transport: httpcore never writes after the response

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended, self.error = True, exc
        self.stop_watching()
        self._wake_reading()
        if self.writing is not None and not self.writing.done():
            self.writing.set_result(None)

    def pause_writing(self) -> None:
        self.writing = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self.writing is not None and not self.writing.done():
            self.writing.set_result(None)
        self.writing = None

    def wait_for_data(self, timeout: float | None) -> asyncio.Future:
        """A future done when data or the end arrives, or failed with httpcore's ReadTimeout after `timeout`.

        One watchdog timer per connection instead of a timeout per read: a read only moves the deadline, and the
        timer, when it fires early, sets itself again for the deadline now in force."""
        loop = asyncio.get_running_loop()
        self.reading = loop.create_future()
        if timeout is not None:
            self.deadline = loop.time() + timeout
            if self.watchdog is None:
                self.watchdog = loop.call_at(self.deadline, self._watch)
        return self.reading

    def _watch(self) -> None:
        self.watchdog = None
        reading = self.reading
        if reading is None or reading.done():
            return  # no read waits: the next one sets the timer again
        loop = reading.get_loop()
        if loop.time() >= self.deadline:
            reading.set_exception(httpcore.ReadTimeout("No data within the read timeout."))
        else:
            self.watchdog = loop.call_at(self.deadline, self._watch)

    def stop_watching(self) -> None:
        if self.watchdog is not None:
            self.watchdog.cancel()
            self.watchdog = None

    def _wake_reading(self) -> None:
        if self.reading is not None and not self.reading.done():
            self.reading.set_result(None)

    def take(self, max_bytes: int) -> bytes:
        """What waits unread, up to `max_bytes`, in one piece."""
        chunks = self.chunks
        if len(chunks[0]) >= max_bytes:
            data = chunks.popleft()
            if len(data) > max_bytes:
                data, rest = data[:max_bytes], data[max_bytes:]
                chunks.appendleft(rest)
        else:
            parts, size = [], 0
            while chunks and size + len(chunks[0]) <= max_bytes:
                parts.append(chunks.popleft())
                size += len(parts[-1])
            data = parts[0] if len(parts) == 1 else b"".join(parts)
        self.unread -= len(data)
        if self.paused and self.unread <= LOW_WATER:
            self.paused = False
            self.transport.resume_reading()
        return data


class Stream(httpcore.AsyncNetworkStream):
    def __init__(self, transport: asyncio.Transport, protocol: Protocol):
        self._transport, self._protocol = transport, protocol

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        protocol = self._protocol
        if not protocol.chunks and not protocol.ended:
            try:
                await protocol.wait_for_data(timeout)
            finally:
                protocol.reading = None
        if protocol.chunks:
            return protocol.take(max_bytes)
        if protocol.error is not None:
            raise httpcore.ReadError(protocol.error) from protocol.error
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        if not buffer:
            return
        protocol = self._protocol
        if self._transport.is_closing():
            raise httpcore.WriteError(protocol.error or "The connection is closed.")
        self._transport.write(buffer)
        if protocol.writing is not None:
            async with _within(timeout, httpcore.WriteTimeout):
                await protocol.writing
            if protocol.error is not None:
                raise httpcore.WriteError(protocol.error) from protocol.error

    async def aclose(self) -> None:
        self._protocol.stop_watching()
        self._transport.close()

    async def start_tls(self, ssl_context, server_hostname=None, timeout=None):  # noqa: ASYNC109
        loop = asyncio.get_running_loop()
        try:
            async with _within(timeout, httpcore.ConnectTimeout, httpcore.ConnectError):
                transport = await loop.start_tls(
                    self._transport, self._protocol, ssl_context, server_hostname=server_hostname
                )
        except BaseException:
            self._transport.close()
            raise
        self._protocol.transport = transport
        return Stream(transport, self._protocol)

    def get_extra_info(self, info: str):
        if info == "is_readable":
            protocol = self._protocol
            return bool(protocol.chunks) or protocol.ended or readable(self._transport.get_extra_info("socket"))
        key = {"ssl_object": "ssl_object", "client_addr": "sockname", "server_addr": "peername", "socket": "socket"}
        return self._transport.get_extra_info(key[info]) if info in key else None


async def _connected(connect, timeout: float | None, socket_options) -> Stream:  # noqa: ASYNC109
    async with _within(timeout, httpcore.ConnectTimeout, httpcore.ConnectError):
        transport, protocol = await connect()
    sock = transport.get_extra_info("socket")
    for option in socket_options or ():
        sock.setsockopt(*option)
    return Stream(transport, protocol)


class Backend(httpcore.AsyncNetworkBackend):
    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):  # noqa: ASYNC109
        loop = asyncio.get_running_loop()
        local = (local_address, 0) if local_address else None
        return await _connected(
            lambda: loop.create_connection(Protocol, host, port, local_addr=local), timeout, socket_options
        )

    async def connect_unix_socket(self, path, timeout=None, socket_options=None):  # noqa: ASYNC109
        loop = asyncio.get_running_loop()
        return await _connected(lambda: loop.create_unix_connection(Protocol, path), timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
