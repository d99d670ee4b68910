"""The background runner of the local API's batches: one service per server process works through them.

It runs with playground/lib/detached.py, which also stamps the heartbeat of the batches it holds. All state lives
in the database: a process claims a batch by writing its worker id and a heartbeat; a batch whose heartbeat is
stale (its process died) is taken over by another. Only processes that store files where the batch's are (the same
bucket, or the same directory) claim it. The output and error files are the record of what is done: a resumed
batch skips the custom_ids already written there and recounts from them, so every request is counted exactly once.
"""

import asyncio
import json
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.db import close_old_connections, connection, transaction
from django.db.models import Q
from django.utils import timezone

from playground.lib import detached, drain, files
from playground.localapi.engines.batches import (
    ACTIVE,
    KIND,
    TERMINAL,
    WORKER_ID,
    BatchRequest,
    InvalidInput,
    create_file,
    max_concurrent,
    new_id,
    parse_input,
    poll_interval,
    read_file,
    request_delay,
    stale_after,
)
from playground.localapi.models import Batch, File

logger = logging.getLogger(__name__)

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
            # A draining process (lib/drain.py) claims nothing new: the others take the queue.
            if len(_running()) < max_concurrent() and not drain.draining():
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
    # Another process sharing the database but not the files (another bucket, or a disk of its own) would find
    # neither the input nor the results: it leaves the batch to the processes that share its storage.
    claimable &= Q(storage__in=(files.location(), ""))
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
    """An append-only JSONL result file. Reopening it drops a half-written last line and lists what is done.

    It is appended to on this machine's disk and stored when closed (lib/files.py; on the local disk, in place);
    a process that takes the batch over resumes from what was stored.
    """

    def __init__(self, file: File):
        self.file = file
        self.spool = files.Spool(file.content.name, resume=True)
        self.path = self.spool.path
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

    def close(self, *, store: bool = True) -> int:
        """Stop writing; store what was written, unless `store` is false (the batch was taken over)."""
        self.handle.close()
        size = os.path.getsize(self.path)
        if store:
            self.spool.publish()
        else:
            self.spool.abandon()
        return size


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
    lost = False
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
    except LostClaim:
        # The process that took the batch over stores its results: ours must not replace them.
        lost = True
        raise
    finally:
        output_bytes = await _db(output.close)(store=not lost)
        error_bytes = await _db(errors.close)(store=not lost)
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
