"""What a provider's response becomes: its trace id; an error status, a redirect or a broken connection as the one
UpstreamError; and the chunks of a streamed chat completion (`ChatStream`), read to the body's end."""

import asyncio
import json
import time
from collections.abc import AsyncIterator

import httpx

from playground.lib import metrics
from playground.upstream import sse
from playground.upstream.errors import UpstreamError, limit_type_in
from playground.upstream.redact import redact_response_error


def trace_id_of(headers) -> str:
    """The provider's id of a request: the spec's trace header, else the `x-request-id` of OpenAI-style providers."""
    return headers.get("x-service-trace-id") or headers.get("x-request-id") or ""


def error_from_response(response: httpx.Response, body: bytes) -> UpstreamError:
    text = body.decode("utf-8", errors="replace").strip()
    message, code, data = text, None, None
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error") if isinstance(parsed.get("error"), dict) else parsed
        message = str(error.get("message") or text)
        code = error.get("code") if isinstance(error.get("code"), int) else None
        data = error.get("data")
    elif isinstance(parsed, str):
        message = parsed
    message = redact_response_error(message, response)
    retry_after = None
    if response.headers.get("retry-after"):
        try:
            retry_after = float(response.headers["retry-after"])
        except ValueError:
            retry_after = None
    metrics.upstream_error(response.url.host, str(response.status_code))
    return UpstreamError(
        kind="http",
        status=response.status_code,
        message=message[:2000] or response.reason_phrase,
        code=code,
        data=data,
        limit_type=limit_type_in(message) if response.status_code == 429 else None,
        retry_after=retry_after,
        trace_id=trace_id_of(response.headers),
    )


def redirect_error(response: httpx.Response) -> UpstreamError:
    """API calls are never redirected: a 3xx means the base URL is wrong (http:// for https://, a moved host)."""
    location = response.headers.get("location", "")
    target = str(response.url.join(location)) if location else "another address"
    metrics.upstream_error(response.url.host, str(response.status_code))
    return UpstreamError(
        kind="http",
        status=response.status_code,
        message=f"The provider redirected to {target}; check the base URL.",
        trace_id=response.headers.get("x-service-trace-id", ""),
    )


def transport_error(exc: httpx.HTTPError, url: str) -> UpstreamError:
    host = httpx.URL(url).host
    metrics.upstream_error(host, "timeout" if isinstance(exc, httpx.TimeoutException) else "network")
    if isinstance(exc, httpx.TimeoutException):
        return UpstreamError(kind="timeout", message=f"No answer from {host} in time ({type(exc).__name__}).")
    if isinstance(exc, httpx.ConnectError | httpx.UnsupportedProtocol | httpx.InvalidURL):
        return UpstreamError(kind="network", message=f"Cannot reach {host}: {exc or type(exc).__name__}.")
    return UpstreamError(kind="stream", message=f"The connection to {host} broke: {exc or type(exc).__name__}.")


END_SECONDS = 0.1  # how long the end of a streamed body may take to follow its [DONE]
END_BYTES = 65536


async def _finish(reads: AsyncIterator[bytes]) -> None:
    """Read what follows [DONE] (the end of a chunked body: in the same read or the next, most often), so that
    the connection goes back to the pool. A response closed before its end takes its connection with it, and
    the next request connects (and shakes hands over TLS) again. A provider that sends more after [DONE], or
    holds the body open, loses its connection as before."""
    read = 0
    try:
        async with asyncio.timeout(END_SECONDS):
            async for data in reads:
                read += len(data)
                if read > END_BYTES:
                    return
    except (TimeoutError, httpx.HTTPError):
        return


class ChatStream:
    """The chunks of a streamed chat completion, parsed once from the raw bytes (upstream/sse.py); ends at
    `[DONE]`. `batches()` gives the chunks of each network read together (the relay handles them at once)."""

    def __init__(self, response: httpx.Response, started: float | None = None):
        self.response = response
        self.trace_id = trace_id_of(response.headers)
        self.done = False
        self.started = started

    def _chunk(self, data: bytes) -> dict:
        try:
            chunk = sse.loads(data)
        except ValueError:
            raise UpstreamError(
                kind="stream", message="The provider sent an unreadable chunk.", trace_id=self.trace_id
            ) from None
        if isinstance(chunk, dict) and "error" in chunk and "choices" not in chunk:
            error = chunk["error"] if isinstance(chunk["error"], dict) else {"message": str(chunk["error"])}
            message = redact_response_error(str(error.get("message", "error")), self.response)
            metrics.upstream_error(self.response.url.host, "stream")
            raise UpstreamError(kind="stream", message=message, trace_id=self.trace_id)
        return chunk

    async def batches(self) -> AsyncIterator[list[dict]]:
        parser = sse.Parser()
        reads = self.response.aiter_bytes()
        try:
            async for data in reads:
                if self.started is not None:
                    metrics.first_token(self.response.url.host, "chat", time.perf_counter() - self.started)
                    self.started = None
                batch = []
                for event in parser.feed(data):
                    if event.strip() == sse.DONE:
                        self.done = True
                        if batch:
                            yield batch
                        await _finish(reads)
                        return
                    batch.append(self._chunk(event))
                if batch:
                    yield batch
        except httpx.HTTPError as exc:
            error = transport_error(exc, str(self.response.url))
            error.kind = "stream" if error.kind == "network" else error.kind
            error.trace_id = self.trace_id
            raise error from None
        metrics.upstream_error(self.response.url.host, "stream")
        raise UpstreamError(kind="stream", message="The stream ended before [DONE].", trace_id=self.trace_id)

    async def __aiter__(self) -> AsyncIterator[dict]:
        async for batch in self.batches():
            for chunk in batch:
                yield chunk
