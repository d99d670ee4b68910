"""Files and batches of the local API, and the background runner that works through the batches.

Input files follow the OpenAI batch convention: JSONL, one chat request per line,
`{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body": {...}}`.

The runner is one background service per server process (playground/lib/detached.py, which also stamps the
heartbeat of the batches it runs). All state lives in the database: a process claims a batch by writing its
worker id and a heartbeat; a batch whose heartbeat is stale (its process died) is taken over by another.
The output and error files are the record of what is done: a resumed batch skips
the custom_ids already written there and recounts from them, so every request is counted exactly once.
"""

import asyncio
import json
import logging
import os
import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.files.base import ContentFile
from django.db import close_old_connections, connection, transaction
from django.db.models import Q
from django.utils import timezone

from playground.lib import detached
from playground.localapi.models import Batch, File

logger = logging.getLogger(__name__)

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


# --- The runner ------------------------------------------------------------------------------------------------

# All the runner's database work runs in one thread of its own, so it never blocks the event loop or waits
# behind request handlers.
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="batch-runner")


def _db(fn):
    return sync_to_async(fn, thread_sensitive=False, executor=_executor)


def register() -> None:
    """The batch poller runs with this process's background runner, which stamps the batches it holds."""
    detached.register_kind(KIND, beat=_beat, stale=stale_after)
    detached.register_service("batch-runner", _run_forever)


def start_runner() -> None:
    """Make sure this process's background runner (and so the batch poller) is going. Idempotent."""
    detached.start_runner()


def _running() -> list[str]:
    return detached.keys(KIND)


async def _run_forever() -> None:
    logger.info("batch runner %s started", WORKER_ID)
    while True:
        try:
            batch_id = None
            if len(_running()) < max_concurrent():
                batch_id = await _db(claim_next)()
            if batch_id:
                task = detached.spawn(_run_claimed(batch_id), name=f"batch-{batch_id}")
                detached.track(KIND, batch_id, task)
                continue
        except Exception:
            logger.exception("batch runner poll failed")
            await _db(close_old_connections)()
        await asyncio.sleep(poll_interval())


def _beat(live: list[str]) -> None:
    Batch.objects.filter(pk__in=live, worker=WORKER_ID).update(heartbeat=timezone.now())


async def _run_claimed(batch_id: str) -> None:
    try:
        await run_batch(batch_id)
    except Exception:
        logger.exception("batch %s failed in the runner", batch_id)
    finally:
        detached.untrack(KIND, batch_id)


def claim_next() -> str | None:
    """Claim one batch that nobody (alive) is running; return its id, or None."""
    cutoff = timezone.now() - timedelta(seconds=stale_after())
    claimable = Q(status__in=ACTIVE) & (Q(worker="") | Q(heartbeat__isnull=True) | Q(heartbeat__lt=cutoff))
    candidates = Batch.objects.filter(claimable).exclude(pk__in=_running()).order_by("created_at", "id")
    now = timezone.now()
    if connection.vendor == "postgresql":
        with transaction.atomic():
            batch = candidates.select_for_update(skip_locked=True).first()
            if batch is None:
                return None
            Batch.objects.filter(pk=batch.pk).update(worker=WORKER_ID, heartbeat=now)
            return batch.pk
    # SQLite has no row locks: a conditional UPDATE is atomic there, and its row count says who won.
    for pk in candidates.values_list("pk", flat=True)[:10]:
        if Batch.objects.filter(claimable, pk=pk).update(worker=WORKER_ID, heartbeat=now):
            return pk
    return None


class LostClaim(Exception):
    """Another process took the batch over (our heartbeat went stale); stop without touching it."""


def _update(batch_id: str, **fields) -> Batch:
    """Save fields on a batch we hold and return it fresh from the database (to see a cancel)."""
    if not Batch.objects.filter(pk=batch_id, worker=WORKER_ID).update(heartbeat=timezone.now(), **fields):
        raise LostClaim(batch_id)
    return Batch.objects.get(pk=batch_id)


def _transition(batch_id: str, current: str, status: str, **fields) -> bool:
    """Compare-and-set the status, so that a cancel arriving in between is never overwritten."""
    return bool(
        Batch.objects.filter(pk=batch_id, worker=WORKER_ID, status=current).update(
            status=status, heartbeat=timezone.now(), **fields
        )
    )


async def run_batch(batch_id: str) -> None:
    batch = await _db(Batch.objects.select_related("input_file").get)(pk=batch_id)
    now = int(time.time())
    if batch.status in TERMINAL:
        return
    if batch.status == "cancelling" and batch.output_file_id is None:
        await _db(_transition)(batch_id, "cancelling", "cancelled", cancelled_at=now)
        return
    if batch.status == "in_queue" and batch.expires_at <= now:
        await _db(_transition)(batch_id, "in_queue", "expired", expired_at=now)
        return
    try:
        requests = await _db(_load_requests)(batch)
    except InvalidInput as exc:
        await _db(_transition)(batch_id, batch.status, "failed", failed_at=now, errors=[str(exc)])
        return
    try:
        if batch.status == "in_queue":
            batch = await _db(_start)(batch, len(requests))
            if batch.output_file_id is None:
                await _db(_transition)(batch_id, "cancelling", "cancelled", cancelled_at=int(time.time()))
                return
        await _work(batch, requests)
    except LostClaim:
        logger.warning("batch %s was taken over by another process", batch_id)


def _load_requests(batch: Batch) -> list[BatchRequest]:
    try:
        data = read_file(batch.input_file)
    except OSError as exc:
        raise InvalidInput(f"input_file_id: the file cannot be read ({exc.strerror})") from None
    return parse_input(data)


def _start(batch: Batch, total: int) -> Batch:
    with transaction.atomic():
        output = _empty_file(batch, "output")
        errors = _empty_file(batch, "errors")
        started = _transition(
            batch.pk,
            "in_queue",
            "in_progress",
            in_progress_at=int(time.time()),
            output_file=output,
            error_file=errors,
            request_counts={"total": total, "completed": 0, "failed": 0},
        )
        if not started:
            # Cancelled meanwhile: the files are not needed.
            transaction.set_rollback(True)
    return Batch.objects.get(pk=batch.pk)


def _empty_file(batch: Batch, kind: str) -> File:
    return create_file(owner=batch.owner, filename=f"{batch.pk}_{kind}.jsonl", purpose="batch_output", data=b"")


class _Journal:
    """An append-only JSONL result file. Reopening it drops a half-written last line and lists what is done."""

    def __init__(self, file: File):
        self.file = file
        self.path = file.content.path
        self.done: set[str] = set()
        with open(self.path, "a+b") as handle:
            handle.seek(0)
            data = handle.read()
            complete = data[: data.rfind(b"\n") + 1]
            if len(complete) != len(data):
                handle.truncate(len(complete))
        for raw in complete.splitlines():
            try:
                self.done.add(json.loads(raw)["custom_id"])
            except (ValueError, KeyError, TypeError):
                continue
        self.handle = open(self.path, "ab")  # noqa: SIM115 (closed by close())

    def append(self, record: dict) -> None:
        self.handle.write(json.dumps(record, separators=(",", ":")).encode() + b"\n")
        self.handle.flush()
        self.done.add(record["custom_id"])

    def close(self) -> int:
        self.handle.close()
        return os.path.getsize(self.path)


def _open_journals(batch: Batch) -> tuple[_Journal, _Journal]:
    batch = Batch.objects.select_related("output_file", "error_file").get(pk=batch.pk)
    if batch.error_file is None:
        # A previous run had dropped the empty error file just before it died.
        batch.error_file = _empty_file(batch, "errors")
        _update(batch.pk, error_file=batch.error_file)
    return _Journal(batch.output_file), _Journal(batch.error_file)


async def _work(batch: Batch, requests: list[BatchRequest]) -> None:
    batch_id = batch.pk
    output, errors = await _db(_open_journals)(batch)
    total = len(requests)
    expired = False
    try:
        last_save = time.monotonic()
        for request in requests:
            if request.custom_id in output.done or request.custom_id in errors.done:
                continue
            if batch.status != "in_progress" or batch.expires_at <= time.time():
                break
            succeeded, record = await _execute(batch, request)
            await _db((output if succeeded else errors).append)(record)
            if time.monotonic() - last_save > 0.5:
                last_save = time.monotonic()
                batch = await _db(_update)(batch_id, request_counts=_counts(total, output, errors))
            if request_delay():
                await asyncio.sleep(request_delay())
        batch = await _db(_update)(batch_id, request_counts=_counts(total, output, errors))
        if batch.status == "in_progress" and batch.expires_at <= time.time():
            for request in requests:
                if request.custom_id not in output.done and request.custom_id not in errors.done:
                    expired = True
                    await _db(errors.append)(_expired_record(request))
    finally:
        output_bytes = await _db(output.close)()
        error_bytes = await _db(errors.close)()
    await _db(_finalize)(batch_id, total, output, errors, output_bytes, error_bytes, expired)


def _counts(total: int, output: _Journal, errors: _Journal) -> dict:
    return {"total": total, "completed": len(output.done), "failed": len(errors.done)}


def _finalize(batch_id: str, total: int, output, errors, output_bytes: int, error_bytes: int, expired: bool) -> None:
    batch = _update(batch_id, request_counts=_counts(total, output, errors))
    File.objects.filter(pk=batch.output_file_id).update(bytes=output_bytes)
    if errors.done:
        File.objects.filter(pk=batch.error_file_id).update(bytes=error_bytes)
    else:
        # Like OpenAI: no error file when nothing failed.
        _update(batch_id, error_file=None)
        File.objects.filter(pk=batch.error_file_id).delete()
        errors.file.content.delete(save=False)
    while True:
        batch.refresh_from_db()
        now = int(time.time())
        if batch.worker != WORKER_ID:
            raise LostClaim(batch_id)
        if batch.status == "cancelling":
            step = ("cancelled", {"cancelled_at": now})
        elif batch.status == "in_progress" and expired:
            step = ("expired", {"expired_at": now})
        elif batch.status == "in_progress":
            step = ("finalizing", {"finalizing_at": now})
        elif batch.status == "finalizing":
            step = ("completed", {"completed_at": now})
        else:
            return
        _transition(batch_id, batch.status, step[0], **step[1])


def _expired_record(request: BatchRequest) -> dict:
    return {
        "id": new_id("batch_req_"),
        "custom_id": request.custom_id,
        "response": None,
        "error": {"code": "batch_expired", "message": "The batch expired before this request was run."},
    }


async def _execute(batch: Batch, request: BatchRequest) -> tuple[bool, dict]:
    """Run one request through the chat logic in-process; return (succeeded, result line)."""
    request_id = new_id("req_")
    record = {"id": new_id("batch_req_"), "custom_id": request.custom_id}
    try:
        status, body = await _complete(request.body, batch.owner)
    except Exception as exc:
        logger.exception("batch %s request %s raised", batch.pk, request.custom_id)
        return False, {**record, "response": None, "error": {"code": "server_error", "message": str(exc)[:500]}}
    response = {"status_code": status, "request_id": request_id, "body": body}
    if 200 <= status < 300:
        return True, {**record, "response": response, "error": None}
    message = body.get("message") if isinstance(body, dict) else None
    code = body.get("code") if isinstance(body, dict) else None
    error = {"code": str(code if code is not None else status), "message": message or f"HTTP {status}"}
    return False, {**record, "response": response, "error": error}


async def _complete(body: dict, owner: str) -> tuple[int, dict]:
    """One request of a batch: the chat engine's non-streaming path, in-process (no faults, no rate limits)."""
    from playground.localapi.engines import chat

    try:
        prepared = await chat.prepare({**body, "stream": False})
    except chat.InvalidRequest as exc:
        return exc.status, {"code": exc.code, "message": exc.message, "data": None}
    choices = await asyncio.to_thread(chat.run, prepared)
    usage = chat.usage(prepared, choices, 0)
    return 200, chat.completion(prepared, choices, usage)
