"""The only module that sends requests to a provider (hosted, or the embedded local API over HTTP); what they
answer is read in responses.py.

One shared `httpx.AsyncClient` per event loop; the key is passed per call and never stored here.
Every failure is raised as `UpstreamError`.
"""

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httpx
from django.conf import settings

from playground.lib import guard, metrics
from playground.upstream import network, sse
from playground.upstream.errors import UpstreamError
from playground.upstream.responses import ChatStream, error_from_response, redirect_error, trace_id_of, transport_error

log = logging.getLogger(__name__)

_clients: dict[tuple[asyncio.AbstractEventLoop, bool], httpx.AsyncClient] = {}


@dataclass(frozen=True)
class Endpoint:
    """Where and how to call a provider. `trusted` skips the address check (the embedded local API)."""

    base_url: str
    api_key: str = field(repr=False)
    trusted: bool = False
    headers: tuple[tuple[str, str], ...] = ()

    def url(self, path: str) -> str:
        return self.base_url.rstrip("/") + "/" + path.lstrip("/")

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}", **dict(self.headers)}


SSE_HEADERS = {"Accept": "text/event-stream", "Cache-Control": "no-store", "Content-Type": "application/json"}


@dataclass
class Result:
    data: object
    trace_id: str
    status: int
    headers: dict[str, str]


def _refused(exc: guard.Refused) -> UpstreamError:
    return UpstreamError(kind=exc.kind, message=exc.message)


class _PinnedBackend(guard.PinnedBackend):
    """The guard's pinned connections, refusing with the client's one error type."""

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):  # noqa: ASYNC109
        try:
            return await super().connect_tcp(
                host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
            )
        except guard.Refused as exc:
            raise _refused(exc) from None


def get_client(trusted: bool = False) -> httpx.AsyncClient:
    """The shared client of this event loop; untrusted endpoints get the one with the pinned transport."""
    loop = asyncio.get_running_loop()
    client = _clients.get((loop, trusted))
    if client is None or client.is_closed:
        limits = httpx.Limits(
            max_connections=settings.UPSTREAM_MAX_CONNECTIONS,
            max_keepalive_connections=min(100, settings.UPSTREAM_MAX_CONNECTIONS),
        )
        if trusted:
            transport = network.install(httpx.AsyncHTTPTransport(limits=limits, verify=network.tls()))
        else:
            transport = guard.pinned_transport(limits, _PinnedBackend, verify=network.tls(), network=network.Backend())
        client = httpx.AsyncClient(
            timeout=httpx.Timeout(settings.UPSTREAM_TIMEOUT, connect=settings.UPSTREAM_CONNECT_TIMEOUT),
            limits=limits,
            transport=transport,
            follow_redirects=False,
        )
        _clients[(loop, trusted)] = client
    return client


async def close_clients() -> None:
    for key, client in list(_clients.items()):
        if key[0] is asyncio.get_running_loop():
            await client.aclose()
        _clients.pop(key, None)


def install_shutdown_hook() -> None:
    """Close the shared client when daphne's reactor stops (daphne has no ASGI lifespan)."""
    try:
        from twisted.internet import defer, reactor
    except ImportError:  # pragma: no cover - not under daphne
        return
    if not getattr(reactor, "_started", False) and not hasattr(reactor, "addSystemEventTrigger"):
        return

    def close():
        return defer.Deferred.fromFuture(asyncio.ensure_future(close_clients()))

    reactor.addSystemEventTrigger("before", "shutdown", close)


async def _check(endpoint: Endpoint) -> None:
    if not endpoint.trusted:
        try:
            await guard.check_url(endpoint.base_url)
        except guard.Refused as exc:
            raise _refused(exc) from None


async def request(endpoint: Endpoint, method: str, path: str, **kwargs) -> Result:
    """One request that returns JSON (or raw bytes when the response is not JSON)."""
    await _check(endpoint)
    url = endpoint.url(path)
    headers = {**endpoint.auth_headers(), **kwargs.pop("headers", {})}
    try:
        response = await get_client(endpoint.trusted).request(method, url, headers=headers, **kwargs)
    except httpx.HTTPError as exc:
        raise transport_error(exc, url) from None
    if 300 <= response.status_code < 400:
        raise redirect_error(response)
    if response.status_code >= 400:
        raise error_from_response(response, response.content)
    data: object = response.content
    media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    # JSON Lines (application/jsonl, a batch file) is bytes for the caller, not one JSON document.
    if media_type == "application/json" or media_type.endswith("+json"):
        try:
            data = response.json()
        except ValueError:
            raise UpstreamError(kind="stream", message="The provider sent invalid JSON.") from None
    return Result(
        data=data,
        trace_id=trace_id_of(response.headers),
        status=response.status_code,
        headers=dict(response.headers),
    )


@asynccontextmanager
async def chat_stream(endpoint: Endpoint, body: dict, headers: dict | None = None, *, sent=None):
    """Stream a chat completion. Leaving the block (or cancelling the task) closes the upstream connection.
    `sent`: called once the request is written (the provider has it; its answer is not there yet)."""
    await _check(endpoint)
    url = endpoint.url("chat/completions")
    headers = {**endpoint.auth_headers(), **(headers or {}), **SSE_HEADERS}
    extensions = {"trace": _on_sent(sent)} if sent is not None else None
    started = time.perf_counter()
    try:
        async with get_client(endpoint.trusted).stream(
            "POST", url, content=sse.dumps({**body, "stream": True}), headers=headers, extensions=extensions
        ) as response:
            if 300 <= response.status_code < 400:
                raise redirect_error(response)
            if response.status_code >= 400:
                raise error_from_response(response, await response.aread())
            if "text/event-stream" not in response.headers.get("content-type", ""):
                # Some providers answer a stream request with plain JSON; surface it as an error that says so.
                raise UpstreamError(
                    kind="stream",
                    message="The provider did not answer with an event stream.",
                    trace_id=trace_id_of(response.headers),
                )
            yield ChatStream(response, started)
    except httpx.HTTPError as exc:
        raise transport_error(exc, url) from None


def _on_sent(callback):
    # httpcore reports the steps of a request to a "trace" extension; HTTP/1.1 and HTTP/2 name them alike.
    async def trace(event: str, info: dict) -> None:
        if event.endswith("send_request_body.complete"):
            callback()

    return trace


async def chat(endpoint: Endpoint, body: dict, headers: dict | None = None) -> Result:
    return await request(endpoint, "POST", "chat/completions", json={**body, "stream": False}, headers=headers or {})


async def rerank(endpoint: Endpoint, body: dict) -> Result:
    return await request(endpoint, "POST", "rerank", json=body)


@asynccontextmanager
async def speech_stream(endpoint: Endpoint, body: dict, headers: dict | None = None):
    """Synthesize speech; yields the httpx response, whose bytes are read with `aiter_bytes()`."""
    await _check(endpoint)
    url = endpoint.url("audio/speech")
    response_started = time.perf_counter()
    try:
        async with get_client(endpoint.trusted).stream(
            "POST", url, json=body, headers={**endpoint.auth_headers(), **(headers or {})}
        ) as response:
            if 300 <= response.status_code < 400:
                raise redirect_error(response)
            if response.status_code >= 400:
                raise error_from_response(response, await response.aread())
            response.extensions["playground_started"] = response_started
            yield response
    except httpx.HTTPError as exc:
        raise transport_error(exc, url) from None


async def iter_bytes(response: httpx.Response) -> AsyncIterator[bytes]:
    """The body of a streamed response; a broken connection becomes an UpstreamError of kind stream."""
    started = response.extensions.pop("playground_started", None)
    try:
        async for chunk in response.aiter_raw():
            if started is not None:
                metrics.first_token(response.url.host, "speech", time.perf_counter() - started)
                started = None
            yield chunk
    except httpx.HTTPError as exc:
        error = transport_error(exc, str(response.url))
        error.kind = "stream"
        error.trace_id = trace_id_of(response.headers)
        raise error from None


async def voices(endpoint: Endpoint) -> Result:
    return await request(endpoint, "GET", "audio/voice/list")


async def voice_upload(endpoint: Endpoint, *, audio: bytes, filename: str, custom_name: str, text: str, model: str):
    return await request(
        endpoint,
        "POST",
        "uploads/audio/voice",
        data={"customName": custom_name, "text": text, "model": model},
        files={"file": (filename, audio)},
    )


async def voice_delete(endpoint: Endpoint, uri: str) -> Result:
    return await request(endpoint, "POST", "audio/voice/deletions", json={"uri": uri})


async def models(endpoint: Endpoint) -> Result:
    return await request(endpoint, "GET", "models")


async def file_upload(endpoint: Endpoint, *, filename: str, content: bytes, purpose: str = "batch") -> Result:
    return await request(endpoint, "POST", "files", data={"purpose": purpose}, files={"file": (filename, content)})


async def file_content(endpoint: Endpoint, file_id: str) -> Result:
    return await request(endpoint, "GET", f"files/{file_id}/content")


async def batch_create(endpoint: Endpoint, body: dict) -> Result:
    return await request(endpoint, "POST", "batches", json=body)


async def batch_get(endpoint: Endpoint, batch_id: str) -> Result:
    return await request(endpoint, "GET", f"batches/{batch_id}")


async def batch_list(endpoint: Endpoint, **params) -> Result:
    return await request(endpoint, "GET", "batches", params=params)


async def batch_cancel(endpoint: Endpoint, batch_id: str) -> Result:
    return await request(endpoint, "POST", f"batches/{batch_id}/cancel")
