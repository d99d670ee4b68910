"""POST /rerank (spec 2.7-2.8): BM25 scoring of documents against a query; see engines/rerank.py."""

import asyncio
import uuid

from django.http import JsonResponse

from playground.localapi import ratelimit
from playground.localapi.engines import rerank as engine
from playground.localapi.http import MB, endpoint, error, rate_limited, trace_headers
from playground.localapi.registry import get_model


@endpoint("POST", json_body=True, faults="status", max_body=10 * MB)
async def rerank(request, owner, body):
    try:
        params = engine.parse(body, get_model(body.get("model")))
    except engine.Invalid as exc:
        return error(400, str(exc), code=exc.code)
    # Thousands of documents take a moment to tokenize and score: keep the event loop free.
    result = await asyncio.to_thread(engine.respond, params)
    limited = ratelimit.check(owner, result["meta"]["tokens"]["input_tokens"])
    if limited:
        return rate_limited(*limited)
    return trace_headers(JsonResponse({"id": f"rerank-{uuid.uuid4().hex}", **result}))
