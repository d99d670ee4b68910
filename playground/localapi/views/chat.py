"""POST /chat/completions (spec 2.1-2.5, 6, 7): JSON or a Server-Sent Events stream.

Streams are paced at LOCAL_API_TOKEN_RATE tokens per second (header X-Local-Token-Rate overrides; 0 means
unlimited), one token per chunk. Every chunk carries `usage: null` except the final one, which carries the full
usage object. When the client goes away, Django cancels the response task under daphne: the generator sees
CancelledError / GeneratorExit, stops generating and records the stream as cancelled (GET /debug/streams).
"""

import asyncio
import json
import time

from django.conf import settings
from django.http import HttpResponse, JsonResponse, StreamingHttpResponse

from playground.localapi import ratelimit
from playground.localapi import streams as stream_registry
from playground.localapi.engines import chat
from playground.localapi.http import (
    INVALID_PARAMETER,
    MB,
    drop_connection,
    endpoint,
    error,
    new_trace_id,
    plain,
    rate_limited,
    trace_headers,
)


def token_rate(request) -> float | HttpResponse:
    raw = request.headers.get("X-Local-Token-Rate")
    if raw is None:
        return float(settings.LOCAL_API_TOKEN_RATE)
    try:
        rate = float(raw)
    except ValueError:
        rate = -1.0
    if not rate >= 0:
        return error(400, "X-Local-Token-Rate: must be a number of tokens per second >= 0", INVALID_PARAMETER)
    return rate


@endpoint("POST", json_body=True, faults="stream", max_body=50 * MB)
async def completions(request, owner, body, fault):
    rate = token_rate(request)
    if isinstance(rate, HttpResponse):
        return rate
    try:
        prepared = await chat.prepare(body, request.headers.get("X-Local-Script"))
    except chat.InvalidRequest as exc:
        if exc.status == 403:
            return plain(403, exc.message)
        return error(exc.status, exc.message, exc.code)
    choices = await asyncio.to_thread(chat.run, prepared)
    cached = chat.prompt_cache.lookup_and_store(owner, prepared.prefixes)
    usage = chat.usage(prepared, choices, cached)
    limited = ratelimit.check(owner, usage["total_tokens"])
    if limited:
        return rate_limited(*limited)
    if not prepared.stream:
        if fault and fault.stall:
            await asyncio.sleep(fault.stall)
        return trace_headers(JsonResponse(chat.completion(prepared, choices, usage)))
    trace_id = new_trace_id()
    events = stream_events(request, owner, prepared, choices, usage, trace_id, rate, fault)
    response = StreamingHttpResponse(events, content_type="text/event-stream; charset=utf-8")
    response["X-Accel-Buffering"] = "no"
    return trace_headers(response, trace_id)


def sse(payload: dict) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


async def stream_events(request, owner, prepared, choices, usage, trace_id, rate, fault):
    record = stream_registry.start(trace_id, prepared.model.id, owner)
    status = "failed"
    head = {
        "id": chat.completion_id(),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": prepared.model.id,
        "system_fingerprint": chat.fingerprint(prepared.model),
    }
    loop = asyncio.get_running_loop()
    started, tokens = loop.time(), 0

    def chunk(index, delta, finish_reason=None, usage_=None):
        choice = {"index": index, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return sse({**head, "choices": [choice], "usage": usage_})

    # A chunk cut off in the middle of its JSON, for the malformed-after-<N> fault.
    malformed = f'data: {{"id": "{head["id"]}", "object": "chat.completion.chunk", "choices": [{{\n\n'.encode()
    try:
        # With n > 1 the choices interleave, token by token, as a real provider's do; each one's finish chunk
        # follows the last delta of all, in index order, the final one carrying the usage.
        streams = [(choice, enumerate(chat.chunk_deltas(prepared.model, choice))) for choice in choices]
        while streams:
            step = [(choice, next(deltas, None)) for choice, deltas in streams]
            streams = [stream for stream, (_, item) in zip(streams, step, strict=True) if item is not None]
            for choice, item in step:
                if item is None:
                    continue
                k, delta = item
                if fault and fault.drop_after is not None and record.chunks_sent >= fault.drop_after:
                    # The connection drops: neither a final chunk nor [DONE].
                    await drop_connection(request)
                    return
                if fault and fault.malformed_after is not None and record.chunks_sent == fault.malformed_after:
                    yield malformed
                if k == 1 and choice.index == 0 and fault and fault.stall:
                    await asyncio.sleep(fault.stall)
                    started = loop.time()
                if fault and fault.idle_after and record.chunks_sent == fault.idle_after[0]:
                    await asyncio.sleep(fault.idle_after[1])
                yield chunk(choice.index, delta)
                record.chunks_sent += 1
                if k == 0:
                    continue
                tokens += 1
                delay = started + tokens / rate - loop.time() if rate > 0 else 0
                # Sleeping (even for 0 s) yields to the loop, so a disconnect cancels us here.
                await asyncio.sleep(max(0.0, delay))
        for choice in choices:
            last = choice.index == choices[-1].index
            yield chunk(choice.index, {}, choice.finish_reason, usage if last else None)
            record.chunks_sent += 1
        yield b"data: [DONE]\n\n"
        status = "completed"
    except (asyncio.CancelledError, GeneratorExit):
        status = "cancelled"
        raise
    finally:
        stream_registry.finish(record, status)
