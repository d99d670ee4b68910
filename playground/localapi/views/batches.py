"""Files and batches (spec 2.6; files and batch retrieval, listing and cancelling follow OpenAI's conventions).

Every resource belongs to the key that created it: another key gets 404, as for an unknown id.
"""

import functools

from django.http import HttpResponse, JsonResponse

from playground.lib import downloads
from playground.lib import files as stored_files
from playground.localapi.engines import batch_runner
from playground.localapi.engines import batches as engine
from playground.localapi.http import DEFAULT_MAX_BODY, MB, endpoint, error, parse_json, plain, trace_headers
from playground.localapi.models import Batch, File

PAGE_DEFAULT = 20
PAGE_MAX = 100


def _ok(body: dict) -> JsonResponse:
    return trace_headers(JsonResponse(body))


def batch_endpoint(*methods: str, max_body: int = DEFAULT_MAX_BODY):
    """endpoint() that also makes sure this process's batch runner is going."""

    def decorate(view):
        @functools.wraps(view)
        def with_runner(request, *args, **kwargs):
            batch_runner.start_runner()
            return view(request, *args, **kwargs)

        return endpoint(*methods, max_body=max_body)(with_runner)

    return decorate


def _get_file(owner: str, file_id: str) -> File | None:
    return File.objects.filter(pk=file_id, owner=owner).first()


def _get_batch(owner: str, batch_id: str) -> Batch | None:
    return Batch.objects.filter(pk=batch_id, owner=owner).first()


def _limit(request) -> int | HttpResponse:
    raw = request.GET.get("limit", str(PAGE_DEFAULT))
    if not raw.isdigit() or not 1 <= int(raw) <= PAGE_MAX:
        return error(400, f"limit: must be an integer from 1 to {PAGE_MAX}")
    return int(raw)


@batch_endpoint("GET", "POST", max_body=engine.MAX_FILE_BYTES + MB)
def files(request, owner):
    if request.method == "GET":
        limit = _limit(request)
        if isinstance(limit, HttpResponse):
            return limit
        found = File.objects.filter(owner=owner).order_by("-created_at", "-id")
        if request.GET.get("purpose"):
            found = found.filter(purpose=request.GET["purpose"])
        page = list(found[: limit + 1])
        return _ok(
            {"object": "list", "data": [engine.file_object(f) for f in page[:limit]], "has_more": len(page) > limit}
        )
    purpose = request.POST.get("purpose")
    if purpose != "batch":
        return error(400, "purpose: must be batch" if purpose else "purpose: required (batch)")
    upload = request.FILES.get("file")
    if upload is None:
        return error(400, "file: required (a JSONL file sent as multipart form data)")
    if upload.size > engine.MAX_FILE_BYTES:
        return error(400, f"file: larger than the limit of {engine.MAX_FILE_BYTES} bytes (100 MB)")
    data = upload.read()
    try:
        engine.parse_input(data)
    except engine.InvalidInput as exc:
        return error(400, str(exc))
    file = engine.create_file(owner=owner, filename=upload.name or "input.jsonl", purpose=purpose, data=data)
    return _ok(engine.file_object(file))


@batch_endpoint("GET")
def file_detail(request, owner, file_id: str):
    file = _get_file(owner, file_id)
    if file is None:
        return plain(404, f"No file with id '{file_id}'.")
    return _ok(engine.file_object(file))


@batch_endpoint("GET", "HEAD")
def file_content(request, owner, file_id: str):
    file = _get_file(owner, file_id)
    if file is None:
        return plain(404, f"No file with id '{file_id}'.")
    size = stored_files.size(file.content.name)
    if size is None:
        return plain(404, f"The content of file '{file_id}' is gone.")
    # Streamed a chunk at a time from the storage (a bucket too), with Range, never read whole into memory.
    return trace_headers(
        downloads.serve_file(
            request,
            lambda: stored_files.open_stream(file.content.name),
            size=size,
            content_type="application/jsonl",
            filename=file.filename,
            inline=True,
        )
    )


@batch_endpoint("GET", "POST")
def batches(request, owner):
    if request.method == "GET":
        limit = _limit(request)
        if isinstance(limit, HttpResponse):
            return limit
        try:
            return _ok(engine.list_batches(owner=owner, limit=limit, after=request.GET.get("after")))
        except engine.InvalidBatch as exc:
            return error(400, str(exc))
    payload = parse_json(request)
    if isinstance(payload, HttpResponse):
        return payload
    try:
        batch = engine.create_batch(owner=owner, payload=payload)
    except engine.InvalidBatch as exc:
        return error(400, str(exc))
    return _ok(engine.batch_object(batch))


@batch_endpoint("GET")
def batch_detail(request, owner, batch_id: str):
    batch = _get_batch(owner, batch_id)
    if batch is None:
        return plain(404, f"No batch with id '{batch_id}'.")
    return _ok(engine.batch_object(batch))


@batch_endpoint("POST")
def batch_cancel(request, owner, batch_id: str):
    batch = _get_batch(owner, batch_id)
    if batch is None:
        return plain(404, f"No batch with id '{batch_id}'.")
    try:
        batch = engine.cancel_batch(batch)
    except engine.InvalidBatch as exc:
        return error(400, str(exc))
    return _ok(engine.batch_object(batch))
