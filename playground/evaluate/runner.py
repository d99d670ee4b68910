"""Live runs: the grid's cells streamed from the provider with a concurrency limit, as one detached job per
evaluation (playground/lib/detached.py). Every path ends each cell with what it had: an answer, an error, or
the partial answer of a stopped or interrupted run. A run survives a restart: on SIGTERM it sends no new cell, lets
those sent finish and is let go of for another process to take up (evaluate/resume.py)."""

import asyncio
import logging
import time

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import close_old_connections
from django.template.loader import render_to_string
from django.utils import timezone

from playground.connections import gate
from playground.evaluate import graders, resume, runs, services
from playground.evaluate.models import Cell, Evaluation, Rating, Run
from playground.lib import detached, drain
from playground.upstream import client
from playground.upstream.errors import UpstreamError

log = logging.getLogger(__name__)

KIND = "evaluate"  # keyed by evaluation pk
FRAME = 0.1  # deltas within one frame go out as one websocket message
SUMMARY_EVERY = 1.0
STOPPED = "Stopped before it finished."
INTERRUPTED = "The run was interrupted (the server stopped); what had arrived is kept."


def group(pk: int) -> str:
    return f"evaluate-{pk}"


def render_cell(cell: Cell) -> str:
    """A cell as the grid shows it (sync: it reads the cell's ratings)."""
    return render_to_string("evaluate/_cell.html", {"cell": cell, "user": None})


def render_summary(evaluation: Evaluation) -> str:
    run = evaluation.latest_run()
    context = {"summaries": services.run_summaries(evaluation, run), "evaluation": evaluation, "run": run}
    return render_to_string("evaluate/_summary.html", context)


def running(pk: int) -> bool:
    return detached.get(KIND, pk) is not None


async def start(
    evaluation: Evaluation,
    cells,
    concurrency: int,
    *,
    user=None,
    scope: str = "all",
    send_empty: bool = False,
    judge_only: bool = False,
) -> Run | None:
    """Begin a new run of the (case, variant) pairs `cells` (None: all; see scopes.select_cells) and run it in the
    background; with `judge_only`, `cells` are the latest run's cell ids, judged in place. Returns the new run.
    Raises EvaluationError when a run is going on or there is nothing to run.

    Rows that leave a variable empty end as skipped unless `send_empty` (the user said to send them)."""
    if running(evaluation.pk):
        raise services.EvaluationError("run: this evaluation is already running; stop it first.")
    if drain.draining():  # after a SIGTERM no new run starts here (lib/drain.py)
        raise services.EvaluationError(f"run: {drain.REFUSAL}")
    if cells is not None and not cells:
        raise services.EvaluationError("run: no cells to run.")
    if await sync_to_async(resume.busy)(evaluation.pk):
        raise services.EvaluationError(
            "run: this evaluation is running on another server process, or is about to go on after a restart; "
            "stop it first."
        )
    await Evaluation.objects.filter(pk=evaluation.pk).aupdate(stop_requested=False)
    run = None
    if judge_only:
        cell_ids, run_id = list(cells), None
    else:
        keys = None if cells is None else set(cells)
        run, cell_ids = await sync_to_async(runs.begin)(evaluation, user=user, keys=keys, scope=scope)
        run_id = run.pk
        if not cell_ids:  # a grid with no rows or no variants: no run to keep
            await Run.objects.filter(pk=run_id).adelete()
            raise services.EvaluationError("run: no cells to run.")
        # This process's from the start, with how it was started: another takes it up the same way.
        await sync_to_async(resume.hold)(run_id, concurrency=concurrency, send_empty=send_empty)
    _launch(evaluation.pk, _run(evaluation.pk, cell_ids, concurrency, send_empty, judge_only, run_id))
    return run


def _launch(pk: int, job) -> None:
    task = detached.spawn(job, name=f"evaluate-{pk}")
    detached.track(KIND, pk, task)
    task.add_done_callback(lambda t: detached.untrack(KIND, pk, t))


def take_up(run: Run, cell_ids: list[int]) -> None:
    """Go on with a run another process let go of or left behind (evaluate/resume.py): its cells not yet answered,
    at the concurrency it was started with. Its page follows it here (the same group)."""
    job = _run(run.evaluation_id, cell_ids, run.concurrency, run.send_empty, False, run.pk, resumed=True)
    _launch(run.evaluation_id, job)


def _keys(cell_ids: list[int]) -> list[str]:
    """Each cell's place in the grid, "case-variant": the page finds there the cell of the run it shows."""
    rows = Cell.objects.filter(pk__in=cell_ids).values_list("pk", "case_id", "variant_id")
    places = {pk: f"{case}-{variant}" for pk, case, variant in rows}
    return [places.get(pk, "") for pk in cell_ids]


async def _send(pk: int, event: dict) -> None:
    await get_channel_layer().group_send(group(pk), event)


async def _run(
    pk: int,
    cell_ids: list[int],
    concurrency: int,
    send_empty: bool = False,
    judge_only: bool = False,
    run_id: int | None = None,
    resumed: bool = False,
) -> None:
    semaphore = asyncio.Semaphore(concurrency)
    began = time.monotonic()
    evaluation = await Evaluation.objects.select_related("connection", "owner").aget(pk=pk)
    # A run stopped while it waited for a process to take it up is ended here, nothing sent.
    state = {"summary_at": 0.0, "summary_every": SUMMARY_EVERY, "lost": False}
    state["halt"] = resumed and evaluation.stop_requested
    run = await Run.objects.filter(pk=run_id).only("number", "started", "cells_run").afirst() if run_id else None
    task, keeper = asyncio.current_task(), None

    def lost() -> None:  # another process took the run over (this one's heartbeat went stale): stop here
        state["lost"] = True
        task.cancel()

    async def one(cell_id: int) -> None:
        async with semaphore:
            if state["halt"] or drain.draining():
                return  # not sent: it stays queued for the process that takes the run up (or ends as stopped)
            try:
                if judge_only:
                    await _judge_again(evaluation, cell_id)
                else:
                    await _cell(evaluation, cell_id, send_empty)
            except Exception:
                # One broken cell must not take the run down: it ends as an error, the others go on.
                log.exception("evaluation %s: cell %s failed", pk, cell_id)
                await sync_to_async(_fail)(cell_id)
        if time.monotonic() - state["summary_at"] > state["summary_every"]:
            state["summary_at"] = summing = time.monotonic()
            await _send(pk, {"type": "run.summary", "html": await sync_to_async(render_summary)(evaluation)})
            # A big grid takes a while to sum: the summary never takes more than a fifth of the run's time.
            state["summary_every"] = max(SUMMARY_EVERY, 5 * (time.monotonic() - summing))

    try:
        if run is not None:  # its heartbeat, while it runs here
            keeper = asyncio.create_task(resume.keep(run.pk, lost))
        keys = await sync_to_async(_keys)(cell_ids)
        start = {"cells": cell_ids, "keys": keys, "concurrency": concurrency, "judging": judge_only}
        await _send(pk, {"type": "run.start", **start, "run": run.number if run else None, "resumed": resumed})
        await asyncio.gather(*(one(cell_id) for cell_id in cell_ids))
    finally:
        if keeper is not None:
            keeper.cancel()
        if not state["lost"]:  # else another process took the run over: it is theirs to end
            await _finish(evaluation, cell_ids, run, round((time.monotonic() - began) * 1000), resumed)


async def _finish(evaluation: Evaluation, cell_ids: list[int], run: Run | None, elapsed_ms: int, resumed: bool):
    pk = evaluation.pk
    if run is not None and drain.draining() and not await sync_to_async(resume.stop_requested)(pk):
        # This process is stopping with cells not sent: another process (or this one, started again) sends them.
        unsent = await Cell.objects.filter(pk__in=cell_ids, status=Cell.QUEUED).aexists()
        if unsent and await sync_to_async(resume.release)(run.pk):
            log.warning("evaluation %s: run %s let go of with cells left to send", pk, run.pk)
            return
    # Cells a stop left in the queue end as stopped (with their earlier answer, if any, kept).
    for cell in await sync_to_async(_end_queued)(cell_ids):
        html = await sync_to_async(render_cell)(cell)
        await _send(pk, {"type": "cell.state", "id": cell.pk, "status": cell.status, "html": html})
    if resumed:  # from its start, across the processes that ran it
        elapsed_ms = round((timezone.now() - run.started).total_seconds() * 1000)
    if run is not None:
        stopped = await Cell.objects.filter(pk__in=cell_ids, status=Cell.STOPPED).aexists()
        await sync_to_async(runs.end)(run.pk, status=Run.STOPPED if stopped else Run.DONE, wall_ms=elapsed_ms)
    evaluation.last_run_cells = run.cells_run if resumed else len(cell_ids)
    evaluation.last_run_ms, evaluation.last_run_ended = elapsed_ms, timezone.now()
    await Evaluation.objects.filter(pk=pk).aupdate(
        last_run_cells=evaluation.last_run_cells, last_run_ms=elapsed_ms, last_run_ended=evaluation.last_run_ended
    )
    html = await sync_to_async(render_summary)(evaluation)
    await _send(pk, {"type": "run.end", "html": html, "elapsed_ms": elapsed_ms, "run": run.number if run else None})


def _fail(cell_id: int) -> None:
    Cell.objects.filter(pk=cell_id).update(status=Cell.ERROR, error="Internal error: see the server log.")


def _end_queued(cell_ids: list[int]) -> list[Cell]:
    close_old_connections()
    cells = list(Cell.objects.filter(pk__in=cell_ids, status__in=Cell.ACTIVE))
    for cell in cells:
        cell.status, cell.error = Cell.STOPPED, STOPPED
    Cell.objects.bulk_update(cells, ["status", "error"])
    return cells


def _prepare(evaluation: Evaluation, cell_id: int, send_empty: bool):
    cell = Cell.objects.select_related("case", "variant", "variant__prompt").get(pk=cell_id)
    # The prompt's latest version and the variants' models, read once per run (the job's own evaluation object).
    memo = evaluation.__dict__.setdefault("_run_memo", {})
    if ("model", cell.variant.model) not in memo:
        memo[("model", cell.variant.model)] = services.catalog_model(evaluation, cell.variant.model)
    if "latest" not in memo:
        memo["latest"] = evaluation.latest_prompt()
    model, prompt = memo[("model", cell.variant.model)], services.prompt_of(cell.variant, memo["latest"])
    cell.version = prompt  # the version this run sends (saved with the cell's state)
    lost = services.lost_version(evaluation, cell.variant, cell.case.position + 1)
    if lost:
        return cell, services.Request({}, lost)
    return cell, services.build_request(cell.case, cell.variant, prompt, model, send_empty=send_empty)


async def _cell(evaluation: Evaluation, cell_id: int, send_empty: bool = False) -> None:
    pk = evaluation.pk
    cell, request = await sync_to_async(_prepare)(evaluation, cell_id, send_empty)
    if cell.status != Cell.QUEUED:
        return
    # Its states are shown without people's ratings (a query per state): the page reads the grid again, ratings
    # and all, when the run ends.
    cell._prefetched_objects_cache = {"ratings": Rating.objects.none()}
    cell.output, cell.error, cell.grades = "", "", {}
    cell.prompt_tokens = cell.completion_tokens = cell.ttft_ms = cell.latency_ms = None
    cell.source = "live"
    if request.skipped:
        cell.status, cell.error = Cell.SKIPPED, request.error
        await _save(pk, cell)
        return
    if request.error or evaluation.connection is None:
        cell.status, cell.error = Cell.ERROR, request.error or "connection: this evaluation has no connection."
        await _save(pk, cell)
        return
    cell.status = Cell.RUNNING
    await _save(pk, cell)
    started = time.monotonic()
    sent_at, sent = started, 0
    body = dict(request.body)
    if evaluation.connection.include_usage:
        body["stream_options"] = {"include_usage": True}
    ticket, asked = None, False  # asked: the request went to the provider

    async def waiting(in_use: int, limit: int) -> None:
        words = f"Waiting for a free slot ({in_use} of {limit} in use)…"
        await _send(pk, {"type": "cell.delta", "id": cell.pk, "text": "", "waiting": words})

    try:
        # A cell is a request like a chat send: the gate's checks, a slot (waited for), the budget reserved.
        ticket = await gate.aopen(
            evaluation.connection, evaluation.owner_id, "chat", body=body, wait=True, on_wait=waiting
        )
        if drain.draining():  # the drain began while it waited for a slot: not sent, it stays for the next process
            await ticket.arelease()
            ticket, cell.status = None, Cell.QUEUED
            await _save(pk, cell)
            return
        started, asked = time.monotonic(), True
        async with client.chat_stream(ticket.endpoint, body) as stream:
            async for chunk in stream:
                usage = chunk.get("usage")
                if isinstance(usage, dict):
                    cell.prompt_tokens = usage.get("prompt_tokens")
                    cell.completion_tokens = usage.get("completion_tokens")
                choices = chunk.get("choices") or []
                delta = choices[0].get("delta") or {} if choices and isinstance(choices[0], dict) else {}
                text = delta.get("content") or ""
                if text:
                    if cell.ttft_ms is None:
                        cell.ttft_ms = round((time.monotonic() - started) * 1000)
                    cell.output += text
                if len(cell.output) > sent and time.monotonic() - sent_at >= FRAME:
                    await _send(pk, {"type": "cell.delta", "id": cell.pk, "text": cell.output[sent:]})
                    sent, sent_at = len(cell.output), time.monotonic()
        cell.latency_ms = round((time.monotonic() - started) * 1000)
        cell.status = Cell.DONE
        cell.grades = graders.grade(cell.output, cell.case.expected, cell.variant.graders)
        cell.runs += 1
    except UpstreamError as exc:
        cell.status, cell.error = Cell.ERROR, f"{exc.title}: {exc.message}"
        cell.latency_ms = round((time.monotonic() - started) * 1000)
    except asyncio.CancelledError:
        if drain.draining() and not asked:  # cut at the end of the drain before it was sent: it stays queued
            cell.status = Cell.QUEUED
        else:
            cell.status, cell.error = Cell.STOPPED, INTERRUPTED if drain.draining() else STOPPED
        await asyncio.shield(_save(pk, cell))
        raise
    finally:
        if ticket is not None:
            usage = {"prompt_tokens": cell.prompt_tokens, "completion_tokens": cell.completion_tokens}
            await asyncio.shield(ticket.asettle(usage=usage, status=cell.status, model=str(body.get("model") or "")))
    if cell.status == Cell.DONE and "judge" in cell.variant.graders:
        # After the cell's own pass is settled: the judge is a request of its own and may need the same slot.
        cell.grades["judge"] = await _judge(evaluation, cell, request.body)
    await _save(pk, cell)


async def _judge_again(evaluation: Evaluation, cell_id: int) -> None:
    """A done cell judged by its variant's model grader, its answer kept as it is."""
    cell, request = await sync_to_async(_prepare)(evaluation, cell_id, True)
    if cell.status != Cell.DONE or "judge" not in cell.variant.graders or request.error:
        return
    cell.grades = {**(cell.grades or {}), "judge": await _judge(evaluation, cell, request.body)}
    await _save(evaluation.pk, cell)


async def _judge(evaluation: Evaluation, cell: Cell, asked: dict) -> dict:
    """The model grader's verdict on a finished cell, with its own usage (charged like any request)."""
    judge = cell.variant.graders["judge"]
    prompt = "\n\n".join(str(m.get("content") or "") for m in asked.get("messages", []))
    messages = graders.judge_messages(judge, prompt=prompt, answer=cell.output, expected=cell.case.expected)
    body = {"model": judge["model"], "messages": messages, "temperature": 0}
    verdict = {"pass": False, "detail": "", "of": graders.judge_key(judge), "model": judge["model"]}
    try:
        # A request of its own through the gate, like the cell's: checked, a slot waited for, charged to a team.
        async with gate.opened(evaluation.connection, evaluation.owner_id, "chat", body=body, wait=True) as ticket:
            result = await client.chat(ticket.endpoint, body)
            usage = result.data.get("usage") if isinstance(result.data.get("usage"), dict) else {}
            await ticket.asettle(usage=usage, model=judge["model"])
    except UpstreamError as exc:
        return {**verdict, "detail": f"the judge model failed: {exc.title}: {exc.message}"}
    choices = result.data.get("choices") or [{}]
    reply = ((choices[0] or {}).get("message") or {}).get("content") or ""
    return {
        **verdict,
        **graders.read_verdict(judge, reply),
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
    }


async def _save(pk: int, cell: Cell) -> None:
    cell.heartbeat = timezone.now()
    await cell.asave()
    await _send(
        pk, {"type": "cell.state", "id": cell.pk, "status": cell.status, "html": await sync_to_async(render_cell)(cell)}
    )


def request_stop(evaluation: Evaluation) -> None:
    """Stop the run: at once in this process, within a heartbeat in another (the flag is read by `beat`)."""
    Evaluation.objects.filter(pk=evaluation.pk).update(stop_requested=True)
    detached.cancel(KIND, evaluation.pk)


# ---------------------------------------------------------------- heartbeat and sweep (sync)


def beat(live: list) -> None:
    active = Cell.objects.filter(evaluation_id__in=live, status__in=Cell.ACTIVE).exclude(run__source=Run.BATCH)
    active.update(heartbeat=timezone.now())
    for pk in Evaluation.objects.filter(pk__in=live, stop_requested=True).values_list("pk", flat=True):
        detached.cancel(KIND, pk)


def sweep(cutoff, live: list) -> int:
    """Cells a dead process left running end as interrupted, and so do their runs (a batch run's cells wait on the
    provider, not on a process: they are not swept; nor are a claimed live run's, which another process takes up
    unless this one takes up no runs: evaluate/resume.py)."""
    stale = Cell.objects.filter(status__in=Cell.ACTIVE, heartbeat__lt=cutoff).exclude(evaluation_id__in=live)
    stale = stale.exclude(run__source=Run.BATCH)
    if resume.period() > 0:  # a live run with a claim is taken up by another process instead (evaluate/resume.py)
        stale = stale.exclude(run__status=Run.RESUMABLE).exclude(run__status=Run.RUNNING, run__heartbeat__isnull=False)
    run_ids = set(stale.values_list("run_id", flat=True))
    count = stale.update(status=Cell.STOPPED, error=INTERRUPTED)
    Run.objects.filter(pk__in=run_ids, status__in=Run.GOING).update(status=Run.INTERRUPTED, ended=timezone.now())
    return count
