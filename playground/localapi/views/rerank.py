"""POST /rerank (spec 2.7-2.8): BM25 scoring of documents against a query; see engines/rerank.py."""

import asyncio
import uuid

from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from playground.localapi import ratelimit
from playground.localapi.engines import rerank as engine
from playground.localapi.http import authenticate, error, fault_for, parse_json, plain, rate_limited, trace_headers
from playground.localapi.registry import get_model


@csrf_exempt
@login_not_required
async def rerank(request):
    if request.method != "POST":
        return plain(405, "Method not allowed: use POST.")
    owner = authenticate(request)
    if isinstance(owner, HttpResponse):
        return owner
    body = parse_json(request)
    if isinstance(body, HttpResponse):
        return body
    fault = fault_for(request, body)
    if fault and fault.response is not None:
        return fault.response
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
