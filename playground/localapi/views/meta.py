"""GET /models, the OpenAPI document, the stream debug endpoint and the catch-all 404."""

from pathlib import Path

from django.contrib.auth.decorators import login_not_required
from django.http import FileResponse, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from playground.localapi import streams as stream_registry
from playground.localapi.http import authenticate, plain, trace_headers
from playground.localapi.registry import MODELS

OPENAPI = Path(__file__).resolve().parent.parent / "openapi.json"


def model_entry(model) -> dict:
    return {
        "id": model.id,
        "object": "model",
        "created": model.created,
        "owned_by": "local",
        "kind": model.kind,
        "description": model.description,
        "capabilities": model.capabilities,
        "context_window": model.context_window,
        "max_output": model.max_output,
        "needs_verification": model.needs_verification,
    }


@csrf_exempt
@login_not_required
def models(request):
    if request.method != "GET":
        return plain(405, "Method not allowed: use GET.")
    owner = authenticate(request)
    if isinstance(owner, HttpResponse):
        return owner
    return trace_headers(JsonResponse({"object": "list", "data": [model_entry(m) for m in MODELS.values()]}))


@csrf_exempt
@login_not_required
def openapi(request):
    if not OPENAPI.exists():
        return plain(404, "No OpenAPI document yet.")
    return trace_headers(FileResponse(OPENAPI.open("rb"), content_type="application/json"))


@csrf_exempt
@login_not_required
def streams(request):
    owner = authenticate(request)
    if isinstance(owner, HttpResponse):
        return owner
    return trace_headers(JsonResponse(stream_registry.snapshot()))


@csrf_exempt
@login_not_required
def not_found(request, *args, **kwargs):
    return plain(404, f"Path not found: {request.path}")
