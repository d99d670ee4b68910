"""Files and batches of the local API (the runner that works through the batches is batch_runner.py).

Input files follow the OpenAI batch convention: JSONL, one chat request per line,
`{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body": {...}}`.

The runner is one background service per server process (playground/lib/detached.py, which also stamps the
heartbeat of the batches it runs). All state lives in the database: a process claims a batch by writing its
worker id and a heartbeat; a batch whose heartbeat is stale (its process died) is taken over by another.
Only a process whose files are stored where the batch's are (the same bucket, or the same directory) claims it.
The output and error files are the record of what is done: a resumed batch skips
the custom_ids already written there and recounts from them, so every request is counted exactly once.
"""

import json
import os
import re
import time
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.core.files.base import ContentFile
from django.db.models import Q

from playground.lib import detached, files
from playground.localapi.models import Batch, File

ENDPOINT = "/v1/chat/completions"
MAX_FILE_BYTES = 100 * 1024 * 1024
MAX_FILE_LINES = 50_000
MAX_CUSTOM_ID = 512
MAX_ERRORS_REPORTED = 10
# The spec states "maximum 24 hours" and "minimum 336 hours" for completion_window, which cannot both hold.
# We read the two numbers as the bounds of one interval: 24h (the spec's example) to 336h (14 days).
MIN_WINDOW_HOURS = 24
MAX_WINDOW_HOURS = 336
WINDOW_RE = re.compile(r"^([1-9][0-9]{0,3})h$")
METADATA_MAX_PAIRS = 16
METADATA_MAX_KEY = 64
METADATA_MAX_VALUE = 512

ACTIVE = ("in_queue", "in_progress", "finalizing", "cancelling")
TERMINAL = ("completed", "failed", "expired", "cancelled")

WORKER_ID = detached.WORKER_ID
KIND = "batch"  # batches in the background-work registry, keyed by batch id


def _setting(name: str, default: float) -> float:
    value = getattr(settings, name, None)
    if value is None:
        value = os.environ.get(name, default)
    return float(value)


def poll_interval() -> float:
    return _setting("LOCAL_API_BATCH_POLL", 0.5)


def stale_after() -> float:
    """Seconds without a heartbeat after which another process takes a batch over."""
    return _setting("LOCAL_API_BATCH_STALE_SECONDS", 15)


def request_delay() -> float:
    """Pause between two requests of a batch (0 in tests; a demo may slow batches down to watch them)."""
    return _setting("LOCAL_API_BATCH_DELAY", 0)


def max_concurrent() -> int:
    return int(_setting("LOCAL_API_BATCH_CONCURRENCY", 4))


def new_id(prefix: str) -> str:
    """Ids sort in creation order (nanosecond clock first), which the list pagination relies on."""
    return f"{prefix}{time.time_ns():016x}{uuid.uuid4().hex[:8]}"


# --- Input files -----------------------------------------------------------------------------------------------


class InvalidInput(ValueError):
    """The input file is not a valid batch file; the message names the line(s)."""


@dataclass
class BatchRequest:
    line: int
    custom_id: str
    body: dict


def parse_input(data: bytes) -> list[BatchRequest]:
    """Validate a JSONL batch input line by line. Blank lines are ignored but still counted for line numbers."""
    if len(data) > MAX_FILE_BYTES:
        raise InvalidInput(f"file: larger than the limit of {MAX_FILE_BYTES} bytes (100 MB)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"file: not UTF-8 text (byte {exc.start})") from None
    errors: list[str] = []
    requests: list[BatchRequest] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        if len(requests) + len(errors) >= MAX_FILE_LINES:
            raise InvalidInput(f"file: more than the limit of {MAX_FILE_LINES} requests")
        problem = _line_problem(raw, number, seen)
        if isinstance(problem, str):
            errors.append(f"line {number}: {problem}")
        else:
            requests.append(problem)
    if errors:
        shown = "; ".join(errors[:MAX_ERRORS_REPORTED])
        more = f" (and {len(errors) - MAX_ERRORS_REPORTED} more)" if len(errors) > MAX_ERRORS_REPORTED else ""
        raise InvalidInput(f"file: {shown}{more}")
    if not requests:
        raise InvalidInput("file: contains no requests")
    return requests


def _line_problem(raw: str, number: int, seen: dict[str, int]) -> str | BatchRequest:
    try:
        item = json.loads(raw)
    except ValueError as exc:
        return f"invalid JSON ({exc.msg} at column {exc.colno})"
    if not isinstance(item, dict):
        return "must be a JSON object"
    custom_id = item.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        return "custom_id is required (a non-empty string)"
    if len(custom_id) > MAX_CUSTOM_ID:
        return f"custom_id is longer than the limit of {MAX_CUSTOM_ID} characters"
    if custom_id in seen:
        return f"custom_id '{custom_id}' duplicates line {seen[custom_id]}"
    seen[custom_id] = number
    if item.get("method") != "POST":
        return "method must be POST"
    if item.get("url") != ENDPOINT:
        return f"url must be {ENDPOINT}"
    body = item.get("body")
    if not isinstance(body, dict):
        return "body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "body.model is required (a string)"
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        return "body.messages is required (a non-empty array)"
    return BatchRequest(number, custom_id, body)


def create_file(*, owner: str, filename: str, purpose: str, data: bytes) -> File:
    file = File(
        id=new_id("file-"),
        owner=owner,
        purpose=purpose,
        filename=filename[:255] or "input.jsonl",
        bytes=len(data),
        created_at=int(time.time()),
    )
    file.content.save(f"{file.id}.jsonl", ContentFile(data), save=False)
    file.save()
    return file


def file_object(file: File) -> dict:
    """An OpenAI file object; `status` is "processed" once the content is complete (an input file is
    validated on upload) and "uploaded" while a running batch still writes its output or error file."""
    return {
        "id": file.id,
        "object": "file",
        "bytes": file.bytes,
        "created_at": file.created_at,
        "filename": file.filename,
        "purpose": file.purpose,
        "status": "uploaded" if _being_written(file) else "processed",
        "status_details": None,
    }


def _being_written(file: File) -> bool:
    if file.purpose != "batch_output":
        return False
    return Batch.objects.filter(Q(output_file=file) | Q(error_file=file), status__in=ACTIVE).exists()


def read_file(file: File) -> bytes:
    with file.content.open("rb") as handle:
        return handle.read()


# --- Batches ---------------------------------------------------------------------------------------------------


class InvalidBatch(ValueError):
    """A batch create request breaks a rule; the message starts with the field name."""


def create_batch(*, owner: str, payload: dict) -> Batch:
    """Validate a create request (spec 2.6) and queue the batch."""
    input_file_id = payload.get("input_file_id")
    if not isinstance(input_file_id, str) or not input_file_id:
        raise InvalidBatch("input_file_id: required (a string)")
    endpoint = payload.get("endpoint")
    if endpoint != ENDPOINT:
        raise InvalidBatch(f"endpoint: must be {ENDPOINT}")
    window = payload.get("completion_window")
    hours = _window_hours(window)
    metadata = _metadata(payload.get("metadata"))
    replace = payload.get("replace")
    if replace is not None and not isinstance(replace, dict):
        raise InvalidBatch("replace: must be an object")
    file = File.objects.filter(pk=input_file_id, owner=owner).first()
    if file is None:
        raise InvalidBatch(f"input_file_id: no file '{input_file_id}'")
    if file.purpose != "batch":
        raise InvalidBatch(f"input_file_id: file '{input_file_id}' has purpose '{file.purpose}', expected 'batch'")
    now = int(time.time())
    return Batch.objects.create(
        id=new_id("batch_"),
        owner=owner,
        endpoint=endpoint,
        input_file=file,
        completion_window=window,
        metadata=metadata,
        replace=replace,
        created_at=now,
        expires_at=now + hours * 3600,
        storage=files.location(),
    )


def _window_hours(window) -> int:
    match = WINDOW_RE.match(window) if isinstance(window, str) else None
    if match is None:
        raise InvalidBatch("completion_window: must look like 24h (<N>h)")
    hours = int(match.group(1))
    if not MIN_WINDOW_HOURS <= hours <= MAX_WINDOW_HOURS:
        raise InvalidBatch(f"completion_window: must be between {MIN_WINDOW_HOURS}h and {MAX_WINDOW_HOURS}h")
    return hours


def _metadata(metadata) -> dict:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidBatch("metadata: must be an object")
    if len(metadata) > METADATA_MAX_PAIRS:
        raise InvalidBatch(f"metadata: more than the limit of {METADATA_MAX_PAIRS} pairs")
    for key, value in metadata.items():
        if len(key) > METADATA_MAX_KEY:
            raise InvalidBatch(f"metadata: key '{key[:20]}…' longer than the limit of {METADATA_MAX_KEY} characters")
        if not isinstance(value, str):
            raise InvalidBatch(f"metadata.{key}: must be a string")
        if len(value) > METADATA_MAX_VALUE:
            raise InvalidBatch(f"metadata.{key}: longer than the limit of {METADATA_MAX_VALUE} characters")
    return metadata


def batch_object(batch: Batch) -> dict:
    return {
        "id": batch.id,
        "object": "batch",
        "endpoint": batch.endpoint,
        "errors": batch.errors,
        "input_file_id": batch.input_file_id,
        "completion_window": batch.completion_window,
        "status": batch.status,
        "output_file_id": batch.output_file_id,
        "error_file_id": batch.error_file_id,
        "created_at": batch.created_at,
        "in_progress_at": batch.in_progress_at,
        "expires_at": batch.expires_at,
        "finalizing_at": batch.finalizing_at,
        "completed_at": batch.completed_at,
        "failed_at": batch.failed_at,
        "expired_at": batch.expired_at,
        "cancelling_at": batch.cancelling_at,
        "cancelled_at": batch.cancelled_at,
        "request_counts": batch.request_counts,
        "metadata": batch.metadata,
    }


def list_batches(*, owner: str, limit: int, after: str | None) -> dict:
    """OpenAI-style page, newest first; `after` is the id of the last batch of the previous page."""
    batches = Batch.objects.filter(owner=owner).order_by("-created_at", "-id")
    if after:
        anchor = Batch.objects.filter(owner=owner, pk=after).first()
        if anchor is None:
            raise InvalidBatch(f"after: no batch '{after}'")
        batches = batches.filter(
            Q(created_at__lt=anchor.created_at) | Q(created_at=anchor.created_at, id__lt=anchor.id)
        )
    page = list(batches[: limit + 1])
    data = [batch_object(b) for b in page[:limit]]
    return {
        "object": "list",
        "data": data,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
        "has_more": len(page) > limit,
    }


def cancel_batch(batch: Batch) -> Batch:
    """Ask for a cancel: the runner finishes it (cancelling -> cancelled). Repeating a cancel is harmless."""
    if batch.status == "cancelling":
        return batch
    if batch.status not in ("in_queue", "in_progress"):
        raise InvalidBatch(f"status: a batch that is {batch.status} cannot be cancelled")
    now = int(time.time())
    updated = Batch.objects.filter(pk=batch.pk, status__in=("in_queue", "in_progress")).update(
        status="cancelling", cancelling_at=now
    )
    batch.refresh_from_db()
    if not updated and batch.status != "cancelling":
        raise InvalidBatch(f"status: a batch that is {batch.status} cannot be cancelled")
    return batch
