"""A 1,000-row × 4-variant live evaluation run survives a restart of its server process mid-run (issue 34.5): it
goes on where it stopped, and the provider is asked for every (case, variant) exactly once.

The provider is tests/evaluate/counting_provider.py, which counts each request by its (case, variant) content. The
run starts on a daphne process over the evaluation page's socket; once a quarter of its cells are answered that
process gets SIGTERM (playground/lib/drain.py): it sends no new cell, lets those in flight finish and lets the run
go (evaluate/resume.py). On SQLite (one process) the same process is started again and takes the run up when it
starts; on PostgreSQL (two processes, Redis between them when REDIS_URL is set) the other process takes it up at
once. Either way the run ends done with 4,000 answered cells, 4,000 requests and no duplicate.

Against the code before resumable runs (main at 307cec3, the test copied there) it fails at its first assertion on
the run after the restart: the drain cut the run, which was left "running" with nobody to take it up.

On the shared 2-core test machine (load average 7-17) the run took 110-124 s on SQLite and 152-159 s on
PostgreSQL, the test 2.5-3.5 min (docs/performance.md, "A 1,000-row × 4-variant live evaluation run").

Its full size is issue 34.5's and runs on PostgreSQL (two processes and Redis, where the volume presses on the
hand-over, the claim in the database and the summary of 4,000 cells) and by hand. On CI's SQLite lane
(tests/conftest.py, CI_LANE) it runs 250 rows × 4 variants: the same restart of the one process a quarter of the
way through, the same take-up and the same count of every (case, variant) asked exactly once, on 1,000 cells.
"""

import asyncio
import json
import os

import pytest
import websockets
from django.conf import settings
from django.db import connection

from playground.evaluate.models import Cell, Run
from tests.conftest import lane_size
from tests.evaluate.counting_provider import MODELS, CountingProvider, counting_evaluation
from tests.faults.conftest import logged_in
from tests.operations.balancer import Fleet
from tests.operations.tabs import cookie_of
from tests.waiting import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.spawns,
    pytest.mark.slow,
    # The counting provider, not the local API, answers it: the same run on SQLite with the local API on has already
    # been through every path it takes, and a minute of CI is its cost.
    pytest.mark.skipif(not settings.LOCAL_API, reason="runs once per database (LOCAL_API=off changes nothing in it)"),
]

ROWS, VARIANTS = lane_size(1000, sqlite_lane=250), 4
CONCURRENCY = 16  # the most a run may ask for (evaluate/forms.MAX_CONCURRENCY)
SERVER = {
    "PLAYGROUND_CONNECTION_CONCURRENCY": "64",  # the gate lets the run's 16 at a time through
    "PLAYGROUND_RESUME_SECONDS": "1",
    "PLAYGROUND_DRAIN_SECONDS": "20",
}


class _At:
    def __init__(self, port: int):
        self.url = f"http://127.0.0.1:{port}"


async def _start_run(port: int, cookie: str, evaluation_pk: int) -> None:
    """Start the run over the page's socket, as the Run button does, and wait for its first answered cell."""
    host = f"127.0.0.1:{port}"
    async with websockets.connect(
        f"ws://{host}/ws/evaluate/{evaluation_pk}/",
        additional_headers={"Cookie": cookie, "Origin": f"http://{host}"},
        open_timeout=10,
    ) as ws:
        await ws.send(json.dumps({"type": "run", "scope": "all", "target": 0, "concurrency": CONCURRENCY}))
        while True:
            event = json.loads(await asyncio.wait_for(ws.recv(), 30))
            assert event["type"] != "error", event
            if event["type"] == "cell" and event.get("status") == "done":
                return


def _done(run: Run) -> int:
    return Cell.objects.filter(run=run, status=Cell.DONE).count()


def test_a_thousand_rows_by_four_variants_survive_a_restart_with_every_cell_asked_exactly_once(
    alice, tmp_path, settings
):
    on_postgres = connection.vendor == "postgresql"
    provider = CountingProvider(delay=0.02).start()
    fleet = Fleet(tmp_path, SERVER)
    try:
        fleet.start(2 if on_postgres else 1)
        evaluation = counting_evaluation(alice, provider, rows=ROWS, variants=VARIANTS)
        with logged_in(alice, _At(fleet.ports[0])) as http:
            cookie = cookie_of(http.cookies["sessionid"])
        asyncio.run(_start_run(fleet.ports[0], cookie, evaluation.pk))
        run = Run.objects.get(evaluation=evaluation)
        total = ROWS * VARIANTS
        wait_for(lambda: _done(run) >= total // 4, timeout=120, what="a quarter of the cells answered")

        fleet.terminate(0)  # SIGTERM mid-run
        fleet.wait_exit(0, 60)
        at_exit = _done(run)
        run.refresh_from_db()
        if on_postgres:
            # The other process takes the run up at once (it may already have).
            assert run.status in (Run.RESUMABLE, Run.RUNNING), run.status
        else:
            # Let go of, not interrupted: its cells not sent wait for a process, none was cut.
            assert (run.status, run.worker) == (Run.RESUMABLE, ""), run.status
            left = Cell.objects.filter(run=run).exclude(status=Cell.DONE)
            assert set(left.values_list("status", flat=True)) == {Cell.QUEUED}
            fleet.start_again(0)  # it takes the run up when it starts
        assert total // 4 <= at_exit < total, "the restart did not come mid-run"
        assert "let go of with cells left to send" in fleet.log(0)

        wait_for(lambda: Run.objects.get(pk=run.pk).finished, timeout=300, what="the run's end", every=0.5)
        run.refresh_from_db()
        statuses = sorted(set(Cell.objects.filter(run=run).values_list("status", flat=True)))
        wanted = {(model, f"q{row + 1}") for row in range(ROWS) for model in MODELS[:VARIANTS]}
        report = {
            "config": "postgresql" if on_postgres else "sqlite",
            "cells_done": _done(run),
            "done_at_sigterm": at_exit,
            "requests": provider.requests(),
            "duplicates": len(provider.duplicates()),
            "missing": len(wanted - set(provider.counts)),
            "wall_ms": run.wall_ms,
        }
        print("resumable run:", report)
        errors = list(Cell.objects.filter(run=run).exclude(status=Cell.DONE).values_list("status", "error")[:5])
        assert run.status == Run.DONE and statuses == [Cell.DONE], (run.status, statuses, errors)
        assert report["cells_done"] == total
        assert provider.duplicates() == {}
        assert set(provider.counts) == wanted and provider.requests() == total
        taker = 1 if on_postgres else 0
        assert "taken up by" in fleet.log(taker)
    finally:
        fleet.stop()
        provider.stop()
        if os.environ.get("SHOW_SERVER_LOG"):
            for i in range(len(fleet.ports)):
                print(fleet.log(i))
