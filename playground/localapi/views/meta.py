"""GET /models, the OpenAPI document, the stream debug endpoint and the catch-all 404."""

from pathlib import Path

from django.http import FileResponse, JsonResponse

from playground.localapi import streams as stream_registry
from playground.localapi.http import endpoint, plain, trace_headers
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


@endpoint("GET")
def models(request, owner):
    return trace_headers(JsonResponse({"object": "list", "data": [model_entry(m) for m in MODELS.values()]}))


@endpoint("GET", auth=False)
def openapi(request):
    if not OPENAPI.exists():
        return plain(404, "No OpenAPI document yet.")
    return trace_headers(FileResponse(OPENAPI.open("rb"), content_type="application/json"))


@endpoint("GET")
def streams(request, owner):
    return trace_headers(JsonResponse(stream_registry.snapshot(owner)))


@endpoint(auth=False)
def not_found(request, *args, **kwargs):
    return plain(404, f"Path not found: {request.path}")
