"""Background work detached from the request: chat generations, speech clips and the local API's batches.

One lifecycle for all of them:
- `spawn()` starts a job as a task of the server's event loop, in a fresh context, so it outlives the request
  that started it; `track()` files it in this process's registry under (kind, key), `cancel()` stops it by id.
- Each kind of job registers how to stamp its rows (`beat`) and how to end the rows whose process died
  (`sweep`). The runner, started once per server process, sweeps at startup and then, every heartbeat, stamps
  the rows this process runs and sweeps the rows nobody stamped for `stale` seconds, whichever process left
  them. One rule: a row still running whose heartbeat is stale is ended with what it had saved.

The runner starts from the apps' `ready()`: under daphne it waits for the reactor's loop; in a management
command or the test process (no reactor) it does not start, and jobs run without the periodic heartbeat.
"""

import asyncio
import contextvars
import logging
import os
import socket
import sys
import uuid
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from playground.lib import metrics

log = logging.getLogger(__name__)

WORKER_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Kind:
    name: str
    # Stamp the heartbeat of these keys' rows (this process runs them).
    beat: Callable[[list], object] | None = None
    # End the rows still running whose heartbeat is older than the cutoff, except these keys; returns how many.
    sweep: Callable[[datetime, list], int] | None = None
    # Seconds without a heartbeat after which a row is stale (None: the BACKGROUND_STALE_SECONDS setting).
    stale: Callable[[], float] | None = None

    def stale_seconds(self) -> float:
        return self.stale() if self.stale else stale_seconds()


_kinds: dict[str, Kind] = {}
_services: dict[str, Callable[[], Coroutine]] = {}
_jobs: dict[tuple[str, object], object] = {}
_tasks: set[asyncio.Task] = set()
_loop: asyncio.AbstractEventLoop | None = None
_runner: asyncio.Task | None = None
# The housekeeping queries run in one thread of their own, never on the loop nor behind request handlers.
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="detached")


def heartbeat_seconds() -> float:
    return settings.BACKGROUND_HEARTBEAT_SECONDS


def stale_seconds() -> float:
    return settings.BACKGROUND_STALE_SECONDS


def register_kind(name: str, *, beat=None, sweep=None, stale=None) -> Kind:
    kind = _kinds[name] = Kind(name, beat=beat, sweep=sweep, stale=stale)
    return kind


def register_service(name: str, factory: Callable[[], Coroutine]) -> None:
    """A loop that runs for the life of the server process (the batch poller), started with the runner."""
    _services[name] = factory


# ---------------------------------------------------------------- jobs and the registry


def spawn(coro: Coroutine, *, name: str) -> asyncio.Task:
    """Run `coro` as a task of the running loop that the request's end does not cancel.

    A fresh context: the task must not inherit the request's thread-sensitive executor, which ends with it.
    """
    loop = asyncio.get_running_loop()
    task = loop.create_task(coro, name=name, context=contextvars.Context())
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task


def track(kind: str, key, job) -> None:
    """File `job` (anything with a `cancel()`) as this process's job for the row `key` of `kind`."""
    if (kind, key) not in _jobs:
        metrics.job_started(kind)
    _jobs[(kind, key)] = job


def untrack(kind: str, key, job=None) -> None:
    if (job is None or _jobs.get((kind, key)) is job) and _jobs.pop((kind, key), None) is not None:
        metrics.job_ended(kind)


def get(kind: str, key):
    return _jobs.get((kind, key))


def keys(kind: str) -> list:
    return [key for (name, key) in list(_jobs) if name == kind]


def cancel(kind: str, key) -> bool:
    """Cancel this process's job for `key`, from any thread; False when it does not run here."""
    job = _jobs.get((kind, key))
    if job is None:
        return False
    # The loop the job runs on: a Generation or a Relay keeps it as `loop`, a bare task knows its own.
    loop = getattr(job, "loop", None) or (job.get_loop() if hasattr(job, "get_loop") else _loop)
    try:
        current = asyncio.get_running_loop()
    except RuntimeError:
        current = None
    if loop is None or loop is current:
        job.cancel()
    else:
        loop.call_soon_threadsafe(job.cancel)
    return True


# ---------------------------------------------------------------- heartbeat and sweep


def housekeep(live: dict[str, list], *, beat: bool = True) -> dict[str, int]:
    """Stamp this process's rows and end the stale ones of every kind (sync); returns how many ended per kind."""
    ended = {}
    now = timezone.now()
    for kind in list(_kinds.values()):
        own = live.get(kind.name, [])
        try:
            if beat and own and kind.beat:
                kind.beat(own)
            if kind.sweep:
                ended[kind.name] = kind.sweep(now - timedelta(seconds=kind.stale_seconds()), own)
        except Exception:
            log.exception("heartbeat of %s failed", kind.name)
            close_old_connections()
    return ended


async def housekeep_now(*, beat: bool = True) -> dict[str, int]:
    # The registry is read on the loop that changes it; the queries run in the runner's thread.
    live = {name: keys(name) for name in _kinds}
    return await sync_to_async(housekeep, thread_sensitive=False, executor=_executor)(live, beat=beat)


def interval() -> float:
    """Stamp often enough that a row never looks stale to another process while this one runs it."""
    shortest = min((kind.stale_seconds() for kind in _kinds.values()), default=stale_seconds())
    return max(0.1, min(heartbeat_seconds(), shortest / 4))


async def _run() -> None:
    log.info("background runner %s started", WORKER_ID)
    for name, factory in _services.items():
        spawn(factory(), name=name)
    await housekeep_now(beat=False)
    while True:
        await asyncio.sleep(interval())
        try:
            await housekeep_now()
        except Exception:
            log.exception("background housekeeping failed")


def start_runner() -> None:
    """Start this process's runner once. Idempotent; safe with no running event loop.

    Without a running loop (called from `ready()` under daphne, or from a sync view's thread) it schedules
    itself on daphne's reactor, which runs the asyncio loop; with no reactor at all it does nothing.
    """
    global _runner, _loop
    if _runner is not None and not _runner.done():
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        reactor = sys.modules.get("twisted.internet.reactor")
        if reactor is not None and hasattr(reactor, "callFromThread"):
            reactor.callFromThread(start_runner)
        return
    _loop = loop
    _runner = spawn(_run(), name="background-runner")
