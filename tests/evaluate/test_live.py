"""Live runs against the real local API over HTTP: the consumer and the runner in this process, the model on the
live server. The scripted model ([say:...]) states what each cell answers."""

import asyncio

import pytest
from asgiref.sync import sync_to_async

from playground.evaluate import runner
from playground.evaluate.models import Cell, Evaluation, Run, TestCase
from playground.lib import detached
from tests.evaluate.conftest import (
    blank_run,
    connect,
    latest_cells,
    make_evaluation,
    receive_until,
    set_template,
    statuses,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]
SAY = "{{question}} [say:Answer to {{question}}]"


async def run(ws, scope="all", target=0, concurrency=4, timeout=90):
    await ws.send_json_to({"type": "run", "scope": scope, "target": target, "concurrency": concurrency})
    return await receive_until(ws, "end", timeout=timeout)


async def finished(pk):
    task = detached.get(runner.KIND, pk)
    if task is not None:
        await asyncio.wait_for(asyncio.shield(task), 30)


async def test_twenty_rows_by_two_variants_fill_every_cell_exactly_once(live_server, alice, catalog):
    evaluation = await sync_to_async(make_evaluation)(alice, rows=20, variants=2, user=SAY)
    ws = await connect(evaluation.pk, alice)
    events = await run(ws, concurrency=4)
    await finished(evaluation.pk)
    await ws.disconnect()

    start = events[0]
    assert start["type"] == "start" and len(start["cells"]) == 40 and start["concurrency"] == 4
    done = [e["id"] for e in events if e["type"] == "cell" and e["status"] == "done"]
    assert len(done) == 40 and len(set(done)) == 40
    running, peak = 0, 0
    for event in events:
        if event["type"] == "cell" and event["status"] == "running":
            running += 1
            peak = max(peak, running)
        elif event["type"] == "cell" and event["status"] in ("done", "error", "stopped"):
            running -= 1
    assert 1 < peak <= 4
    assert await sync_to_async(statuses)(evaluation) == {"done": 40}
    cells = await sync_to_async(list)(latest_cells(evaluation).select_related("case"))
    for cell in cells:
        assert cell.output == f"Answer to {cell.case.values['question']}"
        assert cell.runs == 1 and cell.source == "live"
        assert cell.completion_tokens > 0 and cell.prompt_tokens > 0
        assert 0 <= cell.ttft_ms <= cell.latency_ms
    assert 'data-summary="A"' in events[-1]["html"] and "40" not in events[-1]["html"].split("done")[0][-4:]
    # The run's size and wall time are kept: the summary says them after a reload too.
    saved = await Evaluation.objects.aget(pk=evaluation.pk)
    assert saved.last_run_cells == 40 and saved.last_run_ms == events[-1]["elapsed_ms"] > 0
    assert f'data-last-run="{saved.last_run_ms}"' in events[-1]["html"]
    assert "Last run: 40 cells in" in await sync_to_async(runner.render_summary)(saved)


async def test_rerun_one_cell_one_row_one_column(live_server, alice, catalog):
    evaluation = await sync_to_async(make_evaluation)(alice, rows=3, variants=2, user=SAY)
    ws = await connect(evaluation.pk, alice)
    await run(ws)
    await finished(evaluation.pk)
    cells = await sync_to_async(list)(latest_cells(evaluation).order_by("case__position", "variant__position"))
    first_run = [(c.pk, c.output, c.status, c.grades, c.latency_ms) for c in cells]
    one = cells[3]

    async def places(events) -> set:
        ids = {e["id"] for e in events if e["type"] == "cell"}
        return set(await sync_to_async(list)(Cell.objects.filter(pk__in=ids).values_list("case_id", "variant_id")))

    events = await run(ws, "cell", one.pk)
    await finished(evaluation.pk)
    assert events[0]["run"] == 2 and await places(events) == {(one.case_id, one.variant_id)}
    events = await run(ws, "row", one.case_id)
    await finished(evaluation.pk)
    assert await places(events) == {(c.case_id, c.variant_id) for c in cells if c.case_id == one.case_id}
    events = await run(ws, "column", one.variant_id)
    await finished(evaluation.pk)
    assert await places(events) == {(c.case_id, c.variant_id) for c in cells if c.variant_id == one.variant_id}
    await ws.disconnect()
    # Each re-run is a run of its own, a whole grid (the cells it did not send carried over); run 1 is untouched.
    kept = await sync_to_async(list)(Run.objects.filter(evaluation=evaluation).order_by("number"))
    assert [(r.number, r.scope, r.cells_run, r.status) for r in kept] == [
        (1, "all", 6, "done"),
        (2, "cell", 1, "done"),
        (3, "row", 2, "done"),
        (4, "column", 3, "done"),
    ]
    assert all(r.started_by_id == alice.pk and r.wall_ms is not None for r in kept)
    assert await sync_to_async(statuses)(evaluation) == {"done": 6}
    again = await sync_to_async(list)(Cell.objects.filter(run=kept[0]).order_by("case__position", "variant__position"))
    assert [(c.pk, c.output, c.status, c.grades, c.latency_ms) for c in again] == first_run


async def test_stop_ends_the_run_and_keeps_what_had_arrived(live_server, alice, catalog):
    evaluation = await sync_to_async(make_evaluation)(
        alice, rows=3, variants=1, user="write 1500 words about {{question}}"
    )
    ws = await connect(evaluation.pk, alice)
    await ws.send_json_to({"type": "run", "scope": "all", "concurrency": 1})
    before = await receive_until(ws, "delta", timeout=30)
    await ws.send_json_to({"type": "stop"})
    events = before + await receive_until(ws, "end", timeout=30)
    await finished(evaluation.pk)
    await ws.disconnect()
    assert await sync_to_async(statuses)(evaluation) == {"stopped": 3}
    first = await latest_cells(evaluation).aget(case__position=0)
    streamed = "".join(e["text"] for e in events if e["type"] == "delta" and e["id"] == first.pk)
    assert streamed and first.output.startswith(streamed)
    assert first.error == runner.STOPPED and first.runs == 0
    run = await Run.objects.aget(evaluation=evaluation)
    assert run.status == Run.STOPPED and run.ended is not None


async def test_cells_that_cannot_be_sent_say_why_and_the_others_still_run(live_server, alice, catalog):
    evaluation = await sync_to_async(make_evaluation)(alice, rows=3, variants=1, user="{{question}} {{extra}}")

    def prepare():
        cases = list(TestCase.objects.filter(evaluation=evaluation))
        cases[0].values = {"question": "hi [say:fine]", "extra": "e"}
        cases[1].values = {"question": "x" * 20000, "extra": "y"}
        cases[2].values = {"question": "no extra"}
        TestCase.objects.bulk_update(cases, ["values"])
        set_template(evaluation, "{{question}}" * 8 + " {{extra}}")

    await sync_to_async(prepare)()
    ws = await connect(evaluation.pk, alice)
    await run(ws)
    await finished(evaluation.pk)
    await ws.disconnect()
    cells = await sync_to_async(list)(latest_cells(evaluation).order_by("case__position"))
    assert [c.status for c in cells] == ["done", "error", "skipped"]
    assert cells[0].output.startswith("fine")
    assert cells[1].error == (
        "row 2, variant A: the prompt is about 40008 tokens, over the context window of 32768 tokens of local/chat."
    )
    assert cells[2].error == "Skipped: row 3 has no value for {{extra}}."


async def test_a_runs_concurrency_is_kept_for_the_next_visit(live_server, alice, catalog):
    from django.test import Client

    evaluation = await sync_to_async(make_evaluation)(alice, rows=2, user=SAY)
    assert evaluation.concurrency == 4
    ws = await connect(evaluation.pk, alice)
    events = await run(ws, concurrency=2)
    await finished(evaluation.pk)
    await ws.disconnect()
    assert events[0]["concurrency"] == 2
    assert (await Evaluation.objects.aget(pk=evaluation.pk)).concurrency == 2

    def page() -> str:
        client = Client()
        client.force_login(alice)
        return client.get(f"/evaluate/{evaluation.pk}/").content.decode()

    assert 'id="concurrency" min="1" max="16" value="2"' in await sync_to_async(page)()
    ws = await connect(evaluation.pk, alice)  # a refused run keeps the last one's
    await ws.send_json_to({"type": "run", "scope": "all", "concurrency": 17})
    assert (await ws.receive_json_from(timeout=5))["type"] == "error"
    await ws.disconnect()
    assert (await Evaluation.objects.aget(pk=evaluation.pk)).concurrency == 2


async def test_bad_run_requests_are_answered_in_words(live_server, alice, catalog):
    evaluation = await sync_to_async(make_evaluation)(alice, rows=1, user=SAY)
    ws = await connect(evaluation.pk, alice)
    await ws.send_json_to({"type": "run", "scope": "all", "concurrency": 17})
    assert await ws.receive_json_from(timeout=5) == {"type": "error", "message": "concurrency: must be from 1 to 16."}
    await ws.send_json_to({"type": "run", "scope": "everything"})
    assert (await ws.receive_json_from(timeout=5))["message"].startswith("scope: choose one of")
    await ws.disconnect()


async def test_another_users_websocket_is_closed(live_server, alice, bob, catalog):
    from channels.testing import WebsocketCommunicator

    from playground.asgi import application
    from tests.evaluate.conftest import ORIGIN

    evaluation = await sync_to_async(make_evaluation)(alice, rows=1, user=SAY)
    ws = WebsocketCommunicator(application, f"/ws/evaluate/{evaluation.pk}/", headers=ORIGIN)
    ws.scope["user"] = bob
    await ws.connect()
    assert (await ws.receive_output(timeout=5))["code"] == 4404
    await ws.disconnect()


def test_cells_a_dead_process_left_running_are_ended_with_what_they_had(alice, catalog):
    from datetime import timedelta

    from django.utils import timezone

    evaluation = make_evaluation(alice, rows=2)
    kept = blank_run(evaluation)
    Run.objects.filter(pk=kept.pk).update(status=Run.RUNNING)
    old = timezone.now() - timedelta(minutes=5)
    first, second = latest_cells(evaluation).order_by("case__position")
    Cell.objects.filter(pk=first.pk).update(status=Cell.RUNNING, output="half an ans", heartbeat=old)
    Cell.objects.filter(pk=second.pk).update(status=Cell.QUEUED, heartbeat=old)
    # A run of this process (in `live`) is not swept; a stale one of nobody's is.
    assert runner.sweep(timezone.now() - timedelta(seconds=30), [evaluation.pk]) == 0
    assert runner.sweep(timezone.now() - timedelta(seconds=30), []) == 2
    first.refresh_from_db()
    assert first.status == Cell.STOPPED and first.output == "half an ans" and first.error == runner.INTERRUPTED
    kept.refresh_from_db()
    assert kept.status == Run.INTERRUPTED and kept.ended is not None
