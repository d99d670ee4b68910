"""Resumable live runs: a run survives a restart of the process that runs it (docs/operations.md, "Resumable
evaluation runs").

The database says who runs a live run: `Run.worker` (a process's lib/detached.WORKER_ID) and `Run.heartbeat`, which
the run's own job stamps every heartbeat (`keep`). Every path goes through a conditional UPDATE whose row count says
who won, so two processes never both hold one run, on SQLite as on PostgreSQL:

- a new run is its process's from the start (`hold`);
- on SIGTERM the run stops sending new cells at once, lets the ones already sent finish, and is let go of
  (`release`: status "resumable", no worker) with its unsent cells still queued;
- every process looks for runs to take up (`take_next`) when it starts and then every PLAYGROUND_RESUME_SECONDS:
  a resumable run, or a running one whose heartbeat is stale (its process was killed). It takes one (`take`) and
  sends only its cells not yet answered. Cells that were in flight when a process was killed outright (SIGKILL)
  are sent again: that is the only way a cell is ever sent twice.
"""

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections, connection
from django.db.models import Q
from django.utils import timezone

from playground.evaluate.models import Cell, Evaluation, Run
from playground.lib import detached, drain

log = logging.getLogger(__name__)

TAKE_AT_ONCE = 10  # runs looked at per scan

# The claims' queries run in one thread of their own: a heartbeat never waits behind the run's own cell saves.
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evaluate-resume")


def _db(fn):
    def run(*args):
        try:
            return fn(*args)
        finally:
            close_old_connections()  # that thread's connection, as a request's end would

    return sync_to_async(run, thread_sensitive=False, executor=_executor)


def period() -> float:
    return settings.EVALUATION_RESUME_SECONDS


def stale_cutoff():
    return timezone.now() - timedelta(seconds=detached.stale_seconds())


def claimable(cutoff) -> Q:
    """Live runs nobody runs: let go of by a draining process, or held by one that stopped stamping them."""
    held_by_the_dead = Q(status=Run.RUNNING, heartbeat__lt=cutoff)
    return Q(source=Run.LIVE) & (Q(status=Run.RESUMABLE) | held_by_the_dead)


# ---------------------------------------------------------------- the claim (sync)


def hold(run_id: int, **fields) -> None:
    """A run just begun is this process's (with how it was started: concurrency, send_empty)."""
    Run.objects.filter(pk=run_id).update(worker=detached.WORKER_ID, heartbeat=timezone.now(), **fields)


def stamp(run_id: int) -> bool:
    """This process still runs it; False when another process took it over (this one's heartbeat went stale)."""
    return bool(Run.objects.filter(pk=run_id, worker=detached.WORKER_ID).update(heartbeat=timezone.now()))


def release(run_id: int) -> bool:
    """Let go of a run with cells left to send (this process is draining): the next process to look takes it."""
    held = Run.objects.filter(pk=run_id, worker=detached.WORKER_ID, status=Run.RUNNING)
    return bool(held.update(status=Run.RESUMABLE, worker="", heartbeat=timezone.now()))


def take(run_id: int) -> bool:
    """Take a claimable run; True when this process won it. Cells its last process had in flight when it died are
    queued again (they are sent again: the SIGKILL caveat)."""
    now = timezone.now()
    won = Run.objects.filter(claimable(stale_cutoff()), pk=run_id).update(
        status=Run.RUNNING, worker=detached.WORKER_ID, heartbeat=now
    )
    if won:
        Cell.objects.filter(run_id=run_id, status=Cell.RUNNING).update(status=Cell.QUEUED, heartbeat=now)
    return bool(won)


def busy(evaluation_id: int) -> bool:
    """A live run of the evaluation goes on somewhere, or waits to be taken up: a new run would race it."""
    going = Q(status=Run.RESUMABLE) | Q(status=Run.RUNNING, heartbeat__gte=stale_cutoff())
    return Run.objects.filter(going, evaluation_id=evaluation_id, source=Run.LIVE).exists()


def pending(run_id: int) -> list[int]:
    """The run's cells not yet answered, row by row, as the run began them."""
    cells = Cell.objects.filter(run_id=run_id, status=Cell.QUEUED).order_by("case__position", "variant__position")
    return list(cells.values_list("pk", flat=True))


def take_next(running: list) -> list[tuple[Run, list[int]]]:
    """Take the claimable runs of evaluations this process does not run; each with its cells left to send."""
    taken, seen = [], set(running)
    candidates = Run.objects.filter(claimable(stale_cutoff())).exclude(evaluation_id__in=running)
    for run_id, evaluation_id in candidates.order_by("pk").values_list("pk", "evaluation_id")[:TAKE_AT_ONCE]:
        if evaluation_id in seen or not take(run_id):
            continue
        seen.add(evaluation_id)
        taken.append((Run.objects.get(pk=run_id), pending(run_id)))
        log.warning("evaluation %s: run %s taken up by %s", evaluation_id, run_id, detached.WORKER_ID)
    return taken


def stop_requested(evaluation_id: int) -> bool:
    return Evaluation.objects.filter(pk=evaluation_id, stop_requested=True).exists()


def migrated() -> bool:
    """Every migration is applied (a process may start before `migrate` ran): only then is the claim there."""
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    return not executor.migration_plan(executor.loader.graph.leaf_nodes())


# ---------------------------------------------------------------- on the loop


async def keep(run_id: int, lost) -> None:
    """Stamp the run's heartbeat while its job runs; call `lost()` once another process has taken it over."""
    while True:
        await asyncio.sleep(detached.interval())
        try:
            if not await _db(stamp)(run_id):
                log.warning("run %s was taken over by another process; this one stops sending", run_id)
                lost()
                return
        except Exception:
            log.exception("heartbeat of run %s failed", run_id)


async def scan(launch, kind: str) -> int:
    """Take up the runs waiting for a process; `launch(run, cell_ids)` runs each here as a job of `kind` (keyed by
    evaluation). Returns how many."""
    if drain.draining() or period() <= 0:
        return 0
    taken = await _db(take_next)(detached.keys(kind))
    for run, cell_ids in taken:
        launch(run, cell_ids)
    return len(taken)


async def run_forever(launch, kind: str) -> None:
    """This process's look-out for runs to take up: at start (once the migrations are applied), then every
    PLAYGROUND_RESUME_SECONDS. A look that finds nothing is one indexed query."""
    if period() <= 0:
        return
    while True:
        try:
            if await _db(migrated)():
                break
        except Exception:
            log.exception("resume: cannot read the migrations yet")
        await asyncio.sleep(period())
    while True:
        try:
            await scan(launch, kind)
        except Exception:
            log.exception("resume: looking for runs to take up failed")
        await asyncio.sleep(period())
