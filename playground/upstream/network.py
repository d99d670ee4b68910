"""The upstream client's connections: cheap to keep in a pool of hundreds, and one TLS context for them all.

Whenever a request starts or ends, httpcore's pool asks each of its idle connections whether its socket is readable
(a server that closed a kept connection leaves it readable). anyio's stream answers by building the whole set of its
socket's attributes, a `getpeername` call among them, every time: with 200 streams it was a tenth of the relay
loop's busy time (docs/performance.md, "the upstream pool's bookkeeping"). `install` wraps a transport's network
backend so that each connection keeps its socket and asks only it, with one `poll`.

Each read of a streamed answer (one per chunk, for a paced stream) went through anyio's `fail_after`, a cancel
scope that asks sniffio which library runs the task, and httpcore's exception mapping, two generator context
managers: about a tenth of the relay's busy time under 20 paced streams. The connection reads its anyio stream
itself, under `asyncio.timeout` (a timer on the loop), with httpcore's exceptions and the same timeouts.

Building a TLS context reads the CA bundle (about 20 ms here). Every client (one per event loop and kind, see
client.get_client) shares the process's one, built as the server starts (asgi.py) instead of in a first send.
"""

import asyncio
import functools
import select
import ssl

import anyio
import httpcore
import httpx
from httpcore._backends.anyio import AnyIOStream


@functools.cache
def tls() -> ssl.SSLContext:
    return httpx.create_ssl_context()


def install(transport: httpx.AsyncHTTPTransport) -> httpx.AsyncHTTPTransport:
    pool = transport._pool  # httpx exposes no network_backend option; httpcore's pool takes one (as lib/guard.py)
    pool._network_backend = Backend(pool._network_backend)
    return transport


def readable(sock) -> bool:
    """True when a read would not block: data, or the peer's close (or no socket left to ask)."""
    if sock is None or sock.fileno() < 0:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


class Stream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream):
        self._inner = inner
        self._socket = inner.get_extra_info("socket")
        # httpcore's anyio stream (plain or TLS) is read directly; any other kind through its own read.
        self._receive = inner._stream.receive if isinstance(inner, AnyIOStream) else None

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        if self._receive is None:
            return await self._inner.read(max_bytes, timeout)
        try:
            async with asyncio.timeout(timeout):
                return await self._receive(max_bytes)
        except anyio.EndOfStream:
            return b""
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(exc) from exc
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise httpcore.ReadError(exc) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context, server_hostname=None, timeout=None):  # noqa: ASYNC109
        return Stream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str):
        if info == "is_readable":
            return readable(self._socket)
        return self._inner.get_extra_info(info)


class Backend(httpcore.AsyncNetworkBackend):
    def __init__(self, inner: httpcore.AsyncNetworkBackend):
        self._inner = inner

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):  # noqa: ASYNC109
        return Stream(
            await self._inner.connect_tcp(
                host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
            )
        )

    async def connect_unix_socket(self, path, timeout=None, socket_options=None):  # noqa: ASYNC109
        return Stream(await self._inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)
