"""Resumable live runs (playground/evaluate/resume.py): the claim in the database, the hand-over at a drain, the
takeover of a stale claim, and the stop of a run taken up elsewhere. The runs here run in this process against the
counting provider (tests/evaluate/counting_provider.py); "another process" is this one under another worker id."""

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.utils import timezone

from playground.evaluate import resume, runner, runs, services
from playground.evaluate.models import Cell, Evaluation, Run
from playground.lib import detached, drain
from tests.evaluate.conftest import connect, make_evaluation, receive_until, statuses
from tests.evaluate.counting_provider import CountingProvider, counting_evaluation
from tests.waiting import until

OTHER = "other-host:1:dead"  # a process that is not this one


@pytest.fixture
def provider(settings):
    settings.ALLOWED_UPSTREAM_HOSTS = ["127.0.0.1"]
    provider = CountingProvider(delay=0.15).start()
    yield provider
    provider.stop()


@pytest.fixture(autouse=True)
def claims_thread_closed():
    """The claims' own thread keeps its database connection, as a server's does: closed after each test, so that
    no session of this module is left open on the test database."""
    yield
    resume._executor.submit(connections.close_all).result()


@pytest.fixture
def not_draining():
    yield
    drain.reset()


def _begun(evaluation, *, worker: str = OTHER, status: str = Run.RUNNING, age: float = 0) -> Run:
    """A live run of the whole grid as a process `worker` would hold it, its heartbeat `age` seconds old."""
    run, _ = runs.begin(evaluation, user=evaluation.owner)
    beat = timezone.now() - timedelta(seconds=age)
    Run.objects.filter(pk=run.pk).update(worker=worker, heartbeat=beat, status=status, concurrency=3)
    run.refresh_from_db()
    return run


async def _job_ends(pk: int, timeout: float = 30) -> None:
    task = detached.get(runner.KIND, pk)
    if task is not None:  # a stopped run's task ends cancelled
        done, _ = await asyncio.wait([task], timeout=timeout)
        assert done, f"the run of evaluation {pk} did not end in {timeout} s"


# ---------------------------------------------------------------- the claim (no run is sent)


@pytest.mark.django_db
def test_a_run_held_with_a_fresh_heartbeat_is_taken_by_nobody_else(alice, catalog):
    evaluation = make_evaluation(alice, rows=2)
    run = _begun(evaluation, worker=OTHER)
    assert not resume.take(run.pk)
    assert resume.take_next([]) == []
    assert resume.busy(evaluation.pk)  # and a new run of it is refused while it goes on
    run.refresh_from_db()
    assert run.worker == OTHER


@pytest.mark.django_db
def test_a_run_let_go_of_is_taken_by_exactly_one_process(alice, catalog, monkeypatch):
    evaluation = make_evaluation(alice, rows=2, variants=2)
    run = _begun(evaluation, worker=detached.WORKER_ID)
    assert resume.release(run.pk)
    run.refresh_from_db()
    assert (run.status, run.worker, run.finished) == (Run.RESUMABLE, "", False)
    assert resume.busy(evaluation.pk)

    monkeypatch.setattr(detached, "WORKER_ID", "first:1:a")
    taken = resume.take_next([])
    monkeypatch.setattr(detached, "WORKER_ID", "second:2:b")
    assert resume.take_next([]) == [] and not resume.take(run.pk)
    assert [(r.pk, len(cells)) for r, cells in taken] == [(run.pk, 4)]
    run.refresh_from_db()
    assert (run.status, run.worker, run.concurrency) == (Run.RUNNING, "first:1:a", 3)
    # The process that let go of it no longer holds it: its heartbeat says so.
    assert not resume.stamp(run.pk)


@pytest.mark.django_db
def test_a_stale_claim_is_taken_over_with_only_the_cells_not_answered(alice, catalog):
    evaluation = make_evaluation(alice, rows=3)
    run = _begun(evaluation, worker=OTHER, age=60)  # its process was killed a minute ago
    first, second, third = run.cells.order_by("case__position")
    Cell.objects.filter(pk=first.pk).update(status=Cell.DONE, output="kept")
    Cell.objects.filter(pk=second.pk).update(status=Cell.RUNNING, output="half")  # in flight at the kill
    # The sweep leaves a claimed run to be taken over (it used to end it as interrupted).
    assert runner.sweep(timezone.now(), []) == 0

    [(taken, cells)] = resume.take_next([])
    assert taken.pk == run.pk and cells == [second.pk, third.pk]  # the one in flight is sent again
    assert Cell.objects.get(pk=first.pk).output == "kept"
    run.refresh_from_db()
    assert run.worker == detached.WORKER_ID and run.heartbeat > timezone.now() - timedelta(seconds=5)
    # A process takes no run of an evaluation it runs already.
    Run.objects.filter(pk=run.pk).update(status=Run.RESUMABLE, worker="")
    assert resume.take_next([evaluation.pk]) == []


@pytest.mark.django_db
def test_a_run_of_nobodys_claim_is_still_swept_and_a_batch_run_is_never_taken(alice, catalog):
    evaluation = make_evaluation(alice, rows=1)
    batch = _begun(evaluation, age=60)
    Run.objects.filter(pk=batch.pk).update(source=Run.BATCH)
    assert resume.take_next([]) == []
    Run.objects.filter(pk=batch.pk).update(source=Run.LIVE, heartbeat=None)  # begun before runs had claims
    Cell.objects.filter(run=batch).update(heartbeat=timezone.now() - timedelta(minutes=5))
    assert resume.take_next([]) == []
    assert runner.sweep(timezone.now() - timedelta(seconds=30), []) == 1
    batch.refresh_from_db()
    assert batch.status == Run.INTERRUPTED


@pytest.mark.django_db
def test_a_process_that_takes_up_no_runs_sweeps_a_dead_ones_as_before(alice, catalog, settings):
    settings.EVALUATION_RESUME_SECONDS = 0
    evaluation = make_evaluation(alice, rows=2)
    run = _begun(evaluation, status=Run.RESUMABLE, worker="", age=60)
    Cell.objects.filter(run=run).update(heartbeat=timezone.now() - timedelta(minutes=5))
    assert runner.sweep(timezone.now() - timedelta(seconds=30), []) == 2
    run.refresh_from_db()
    assert run.status == Run.INTERRUPTED and run.ended is not None


# ---------------------------------------------------------------- runs sent (in this process)


@pytest.mark.django_db(transaction=True)
async def test_a_drain_lets_the_run_go_and_a_process_takes_up_only_the_cells_not_sent(
    alice, catalog, provider, not_draining
):
    evaluation = await sync_to_async(counting_evaluation)(alice, provider, rows=6, variants=2)
    ws = await connect(evaluation.pk, alice)
    run = await runner.start(evaluation, None, 2)
    await until(lambda: provider.requests() >= 3, timeout=30, what="a few cells sent")
    drain.begin()  # SIGTERM: the cells in flight finish, nothing new is sent
    await _job_ends(evaluation.pk)
    await run.arefresh_from_db()
    assert (run.status, run.worker) == (Run.RESUMABLE, "")
    left = await sync_to_async(statuses)(evaluation)
    assert set(left) == {"done", "queued"} and 3 <= left["done"] < 12
    assert provider.requests() == left["done"] and not provider.duplicates()
    first = await receive_until(ws, "start")
    assert not first[-1]["resumed"] and len(first[-1]["cells"]) == 12

    # The other process (this one, done draining) takes it up and sends only the cells left.
    drain.reset()
    assert await resume.scan(runner.take_up, runner.KIND) == 1
    events = await receive_until(ws, "start")
    assert events[-1]["resumed"] and len(events[-1]["cells"]) == left["queued"]
    assert events[-1]["concurrency"] == 2 and events[-1]["run"] == run.number
    end = (await receive_until(ws, "end"))[-1]
    await _job_ends(evaluation.pk)
    await ws.disconnect()
    assert await sync_to_async(statuses)(evaluation) == {"done": 12}
    assert provider.requests() == 12 and not provider.duplicates()
    await run.arefresh_from_db()
    assert run.status == Run.DONE and run.wall_ms == end["elapsed_ms"] > 0
    assert (await Evaluation.objects.aget(pk=evaluation.pk)).last_run_cells == 12


@pytest.mark.django_db(transaction=True)
async def test_a_run_taken_up_is_stopped_by_the_stop_button(alice, catalog, provider):
    evaluation = await sync_to_async(counting_evaluation)(alice, provider, rows=20, variants=1)
    run = await sync_to_async(_begun)(evaluation, status=Run.RESUMABLE, worker="")
    assert await resume.scan(runner.take_up, runner.KIND) == 1
    await until(lambda: provider.requests() >= 3, timeout=30, what="cells sent")
    await sync_to_async(runner.request_stop)(evaluation)
    await _job_ends(evaluation.pk)
    sent = provider.requests()
    counts = await sync_to_async(statuses)(evaluation)
    assert counts.get("stopped", 0) > 0 and counts.get("done", 0) + counts["stopped"] == 20
    await run.arefresh_from_db()
    assert run.status == Run.STOPPED and run.ended is not None
    await asyncio.sleep(0.5)
    assert provider.requests() == sent <= 20 and not provider.duplicates()


@pytest.mark.django_db(transaction=True)
async def test_a_run_stopped_while_it_waits_to_be_taken_up_ends_with_nothing_sent(alice, catalog, provider):
    evaluation = await sync_to_async(counting_evaluation)(alice, provider, rows=4, variants=1)
    run = await sync_to_async(_begun)(evaluation, status=Run.RESUMABLE, worker="")
    with pytest.raises(services.EvaluationError, match="another server process"):
        await runner.start(evaluation, None, 2)
    await sync_to_async(runner.request_stop)(evaluation)
    assert await resume.scan(runner.take_up, runner.KIND) == 1
    await _job_ends(evaluation.pk)
    await run.arefresh_from_db()
    assert run.status == Run.STOPPED and provider.requests() == 0
    assert await sync_to_async(statuses)(evaluation) == {"stopped": 4}


@pytest.mark.django_db(transaction=True)
async def test_a_process_that_lost_its_claim_stops_sending_and_leaves_the_run_to_its_new_holder(
    alice, catalog, provider, settings
):
    settings.BACKGROUND_HEARTBEAT_SECONDS = 0.2
    evaluation = await sync_to_async(counting_evaluation)(alice, provider, rows=20, variants=1)
    run = await runner.start(evaluation, None, 1)
    await until(lambda: provider.requests() >= 1, timeout=30, what="a cell sent")
    await Run.objects.filter(pk=run.pk).aupdate(worker=OTHER)  # another process took it over meanwhile
    await _job_ends(evaluation.pk)
    sent = provider.requests()
    await asyncio.sleep(0.5)
    assert provider.requests() == sent < 20
    await run.arefresh_from_db()
    assert (run.status, run.worker, run.ended) == (Run.RUNNING, OTHER, None)  # theirs to end
