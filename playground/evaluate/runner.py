"""Live runs: the grid's cells streamed from the provider with a concurrency limit, as one detached job per
evaluation (playground/lib/detached.py). Every path ends each cell with what it had: an answer, an error, or
the partial answer of a stopped or interrupted run."""

import asyncio
import logging
import time

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import close_old_connections
from django.template.loader import render_to_string
from django.utils import timezone

from playground.connections import gate
from playground.evaluate import graders, runs, services
from playground.evaluate.models import Cell, Evaluation, Run
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
    variants, _, cells = services.grid(evaluation)
    run = evaluation.latest_run()
    context = {"summaries": services.summaries(variants, cells), "evaluation": evaluation, "run": run}
    return render_to_string("evaluate/_summary.html", context)


def running(pk: int) -> bool:
    return detached.get(KIND, pk) is not None


def select_cells(evaluation: Evaluation, scope: str, target) -> set[tuple[int, int]] | list[int] | None:
    """What a run of `scope` sends: the (case, variant) pairs of the latest run's grid (None: every one), or for
    "judge" the ids of the latest run's cells to judge again; an empty set when nothing matches."""
    if scope == "judge":
        return _unjudged(evaluation)
    if scope == "all":
        return None
    variants = list(evaluation.variants.values_list("pk", flat=True))
    keys = {(c, v) for c in evaluation.cases.values_list("pk", flat=True) for v in variants}
    if scope == "missing":
        run = evaluation.latest_run()
        done = set(run.cells.filter(status=Cell.DONE).values_list("case_id", "variant_id")) if run else set()
        return keys - done
    if scope == "row":
        return {key for key in keys if key[0] == target}
    if scope == "column":
        return {key for key in keys if key[1] == target}
    if scope == "cell":
        # Any run's cell names its place in the grid: the page may still show the run before.
        cell = evaluation.cells.filter(pk=target).values_list("case_id", "variant_id").first()
        return {cell} & keys if cell else set()
    return set()


def _unjudged(evaluation: Evaluation) -> list[int]:
    """Done cells of the latest run whose variant has a model grader and that have no verdict of its present
    configuration (a batch's results, or cells whose rubric changed): judged again without asking their model
    again."""
    run = evaluation.latest_run()
    if run is None:
        return []
    cells = run.cells.filter(status=Cell.DONE).select_related("variant")
    cells = cells.order_by("case__position", "variant__position")
    wanted = []
    for cell in cells:
        judge = cell.variant.graders.get("judge")
        if judge and (cell.grades or {}).get("judge", {}).get("of") != graders.judge_key(judge):
            wanted.append(cell.pk)
    return wanted


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
    """Begin a new run of the (case, variant) pairs `cells` (None: all; see select_cells) and run it in the
    background; with `judge_only`, `cells` are the latest run's cell ids, judged in place. Returns the new run.
    Raises EvaluationError when a run is going on or there is nothing to run.

    Rows that leave a variable empty end as skipped unless `send_empty` (the user said to send them)."""
    if running(evaluation.pk):
        raise services.EvaluationError("run: this evaluation is already running; stop it first.")
    if drain.draining():  # after a SIGTERM no new run starts here (lib/drain.py)
        raise services.EvaluationError(f"run: {drain.REFUSAL}")
    if cells is not None and not cells:
        raise services.EvaluationError("run: no cells to run.")
    await Evaluation.objects.filter(pk=evaluation.pk).aupdate(stop_requested=False)
    run = None
    if judge_only:
        cell_ids, run_id = list(cells), None
    else:
        run, cell_ids = await sync_to_async(runs.begin)(
            evaluation, user=user, keys=None if cells is None else set(cells), scope=scope
        )
        run_id = run.pk
        if not cell_ids:  # a grid with no rows or no variants: no run to keep
            await Run.objects.filter(pk=run_id).adelete()
            raise services.EvaluationError("run: no cells to run.")
    job = _run(evaluation.pk, cell_ids, concurrency, send_empty, judge_only, run_id)
    task = detached.spawn(job, name=f"evaluate-{evaluation.pk}")
    detached.track(KIND, evaluation.pk, task)
    task.add_done_callback(lambda t: detached.untrack(KIND, evaluation.pk, t))
    return run


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
) -> None:
    semaphore = asyncio.Semaphore(concurrency)
    began = time.monotonic()
    evaluation = await Evaluation.objects.select_related("connection", "owner").aget(pk=pk)
    state = {"summary_at": 0.0}
    number = await Run.objects.filter(pk=run_id).values_list("number", flat=True).afirst() if run_id else None
    keys = await sync_to_async(_keys)(cell_ids)
    start = {"cells": cell_ids, "keys": keys, "concurrency": concurrency, "judging": judge_only, "run": number}
    await _send(pk, {"type": "run.start", **start})

    async def one(cell_id: int) -> None:
        async with semaphore:
            try:
                if judge_only:
                    await _judge_again(evaluation, cell_id)
                else:
                    await _cell(evaluation, cell_id, send_empty)
            except Exception:
                # One broken cell must not take the run down: it ends as an error, the others go on.
                log.exception("evaluation %s: cell %s failed", pk, cell_id)
                await sync_to_async(_fail)(cell_id)
        if time.monotonic() - state["summary_at"] > SUMMARY_EVERY:
            state["summary_at"] = time.monotonic()
            await _send(pk, {"type": "run.summary", "html": await sync_to_async(render_summary)(evaluation)})

    try:
        await asyncio.gather(*(one(cell_id) for cell_id in cell_ids))
    finally:
        # Cells a stop left in the queue end as stopped (with their earlier answer, if any, kept).
        left = await sync_to_async(_end_queued)(cell_ids)
        for cell in left:
            await _send(
                pk,
                {
                    "type": "cell.state",
                    "id": cell.pk,
                    "status": cell.status,
                    "html": await sync_to_async(render_cell)(cell),
                },
            )
        elapsed_ms = round((time.monotonic() - began) * 1000)
        if run_id is not None:
            stopped = await Cell.objects.filter(pk__in=cell_ids, status=Cell.STOPPED).aexists()
            await sync_to_async(runs.end)(run_id, status=Run.STOPPED if stopped else Run.DONE, wall_ms=elapsed_ms)
        evaluation.last_run_cells, evaluation.last_run_ms = len(cell_ids), elapsed_ms
        evaluation.last_run_ended = timezone.now()
        await Evaluation.objects.filter(pk=pk).aupdate(
            last_run_cells=evaluation.last_run_cells,
            last_run_ms=elapsed_ms,
            last_run_ended=evaluation.last_run_ended,
        )
        html = await sync_to_async(render_summary)(evaluation)
        await _send(pk, {"type": "run.end", "html": html, "elapsed_ms": elapsed_ms, "run": number})


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
    model = services.catalog_model(evaluation, cell.variant.model)
    prompt = services.prompt_of(cell.variant, evaluation.latest_prompt())
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
    ticket = None

    async def waiting(in_use: int, limit: int) -> None:
        words = f"Waiting for a free slot ({in_use} of {limit} in use)…"
        await _send(pk, {"type": "cell.delta", "id": cell.pk, "text": "", "waiting": words})

    try:
        # A cell is a request like a chat send: the gate's checks, a slot (waited for), the budget reserved.
        ticket = await gate.aopen(
            evaluation.connection, evaluation.owner_id, "chat", body=body, wait=True, on_wait=waiting
        )
        started = time.monotonic()
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
        cell.status, cell.error = Cell.STOPPED, STOPPED
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
    provider, not on a process: they are not swept)."""
    stale = Cell.objects.filter(status__in=Cell.ACTIVE, heartbeat__lt=cutoff).exclude(evaluation_id__in=live)
    stale = stale.exclude(run__source=Run.BATCH)
    run_ids = set(stale.values_list("run_id", flat=True))
    count = stale.update(status=Cell.STOPPED, error=INTERRUPTED)
    Run.objects.filter(pk__in=run_ids, status=Run.RUNNING).update(status=Run.INTERRUPTED, ended=timezone.now())
    return count
