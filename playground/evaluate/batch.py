"""The grid as one provider batch (spec 2.6): a JSONL input file, custom_id = row × variant, results joined back."""

import json

from asgiref.sync import sync_to_async
from django.utils import timezone

from playground.batches import services as batches
from playground.batches.models import Batch
from playground.connections import gate
from playground.evaluate import graders, runs, services
from playground.evaluate.models import Cell, Evaluation, Run
from playground.prompts.models import PromptVersion
from playground.upstream import client
from playground.upstream.errors import UpstreamError

NO_FILES = (404, 405, 501)


class BatchRefused(Exception):
    def __init__(self, shown: dict):
        super().__init__(shown.get("message", ""))
        self.shown = shown


def custom_id(case, variant) -> str:
    return f"row-{case.position + 1}-variant-{variant.label}"


def build(evaluation: Evaluation) -> tuple[bytes, dict, list[str], dict]:
    """The input file, the custom_id -> [case, variant, version] map, the cells that cannot be sent (with why),
    and the skipped ones: (case pk, variant pk) -> why."""
    latest = evaluation.latest_prompt()
    models = {}
    lines, mapping, problems, skipped = [], {}, [], {}
    variants = list(evaluation.variants.select_related("prompt"))
    for case in evaluation.cases.all():
        for variant in variants:
            if variant.model not in models:
                models[variant.model] = services.catalog_model(evaluation, variant.model)
            lost = services.lost_version(evaluation, variant, case.position + 1)
            if lost:
                problems.append(lost)
                continue
            prompt = services.prompt_of(variant, latest)
            request = services.build_request(case, variant, prompt, models[variant.model])
            if request.skipped:
                skipped[(case.pk, variant.pk)] = request.error  # stays out, as it does in a live run
                continue
            if request.error:
                problems.append(request.error)
                continue
            cid = custom_id(case, variant)
            mapping[cid] = [case.pk, variant.pk, request.version.pk]
            item = {"custom_id": cid, "method": "POST", "url": batches.ENDPOINT, "body": request.body}
            lines.append(json.dumps(item, ensure_ascii=False))
    if not mapping and skipped:
        problems = list(skipped.values())
    return ("\n".join(lines) + "\n").encode(), mapping, problems, skipped


def explain(exc: UpstreamError, *, uploading: bool, mapping: dict) -> dict:
    shown = batches.explain(exc)
    if uploading and exc.status in NO_FILES:
        shown["title"] = "This provider does not take file uploads"
        shown["message"] = (
            f"POST /files answered {exc.status}, so the grid cannot run as a batch on this connection. "
            "Run it live instead, or pick a connection whose provider has the files and batches endpoints."
        )
        shown["next_step"] = ""
    ids = list(mapping)
    named = []
    for problem in shown.get("problems", []):
        number = problem.split(":", 1)[0].removeprefix("line ").strip()
        if number.isdigit() and 0 < int(number) <= len(ids):
            named.append(f"{ids[int(number) - 1]} ({problem})")
        else:
            named.append(problem)
    shown["problems"] = named
    return shown


async def submit(evaluation: Evaluation, *, user) -> Batch:
    """Upload the grid and create the batch. Raises BatchRefused with the reason in words."""
    content, mapping, problems, skipped = await sync_to_async(build)(evaluation)
    if problems:
        raise BatchRefused({"title": "Some cells cannot be sent", "message": "", "problems": problems[:20]})
    connection = evaluation.connection
    filename = f"evaluation-{evaluation.pk}.jsonl"
    try:
        ticket = await gate.aopen(connection, user, "batch")
    except gate.Refused as refusal:
        raise BatchRefused({"title": refusal.title, "message": refusal.message, "problems": []}) from None
    async with gate.ending(ticket):
        try:
            uploaded = await client.file_upload(ticket.endpoint, filename=filename, content=content, purpose="batch")
        except UpstreamError as exc:
            raise BatchRefused(explain(exc, uploading=True, mapping=mapping)) from None
        body = {"input_file_id": uploaded.data["id"], "endpoint": batches.ENDPOINT, "completion_window": "24h"}
        body["metadata"] = {"evaluation": str(evaluation.pk)}
        try:
            created = await client.batch_create(ticket.endpoint, body)
        except UpstreamError as exc:
            raise BatchRefused(explain(exc, uploading=False, mapping=mapping)) from None
        await ticket.asettle(documents=len(mapping), status="submitted")
    batch = Batch(
        owner=user,
        connection=connection,
        input_file_id=uploaded.data["id"],
        input_filename=filename,
        request_count=len(mapping),
    )
    batch.apply(created.data)
    await batch.asave()
    evaluation.batch, evaluation.batch_map, evaluation.batch_joined = batch, mapping, False
    await evaluation.asave(update_fields=["batch", "batch_map", "batch_joined", "updated"])
    await sync_to_async(_begin)(evaluation, user, batch, skipped)
    return batch


def _begin(evaluation: Evaluation, user, batch: Batch, skipped: dict) -> Run:
    """The batch's run: every cell queued until the results come back, those left out skipped (with why)."""
    run, _ = runs.begin(evaluation, user=user, source=Run.BATCH)
    run.batch = batch
    run.save(update_fields=["batch"])
    cells = list(run.cells.filter(status=Cell.QUEUED))
    for cell in cells:
        reason = skipped.get((cell.case_id, cell.variant_id))
        if reason:
            cell.status, cell.error, cell.source = Cell.SKIPPED, reason, "batch"
        else:
            cell.source = "batch"
    Cell.objects.bulk_update(cells, ["status", "error", "source"], batch_size=500)
    return run


async def refresh(evaluation: Evaluation) -> int:
    """Follow the batch; once it is over, join its results into the grid (once). Returns the cells filled."""
    batch = evaluation.batch
    await batches.refresh(batch)
    if not batch.is_terminal or evaluation.batch_joined:
        return 0
    outcomes = {}
    for file_id in (batch.output_file_id, batch.error_file_id):
        if file_id:
            for item in batches.parse_jsonl(await batches.file_content(batch, file_id)):
                outcomes[str(item.get("custom_id", ""))] = item
    filled = await sync_to_async(join)(evaluation, outcomes)
    evaluation.batch_joined = True
    await evaluation.asave(update_fields=["batch_joined", "updated"])
    return filled


NO_RESULT = "The batch ended without a result for this cell."


def join(evaluation: Evaluation, outcomes: dict) -> int:
    """Put each result line in the cell its custom_id names, in the batch's run; lines the map does not know are
    ignored, and cells the batch gave nothing for end as stopped. The run ends."""
    run = Run.objects.filter(evaluation=evaluation, batch=evaluation.batch).order_by("-number").first()
    if run is None:  # a batch submitted before runs were kept: its results are a run of their own
        run, _ = runs.begin(evaluation, user=evaluation.owner, source=Run.BATCH)
        run.batch = evaluation.batch
        run.save(update_fields=["batch"])
    cells = {(c.case_id, c.variant_id): c for c in run.cells.select_related("case", "variant").all()}
    sent = {key[2] for key in evaluation.batch_map.values() if len(key) > 2}
    versions = set(PromptVersion.objects.filter(pk__in=sent).values_list("pk", flat=True))  # still there
    changed = []
    for cid, item in outcomes.items():
        key = evaluation.batch_map.get(cid)
        cell = cells.get(tuple(key[:2])) if key else None
        if cell is None:
            continue
        answer, error, _ = batches.outcome_of(item)
        body = (item.get("response") or {}).get("body") or {}
        usage = body.get("usage") if isinstance(body, dict) and isinstance(body.get("usage"), dict) else {}
        cell.source, cell.ttft_ms, cell.latency_ms = "batch", None, None
        if len(key) > 2:  # the version the batch was built from
            cell.version_id = key[2] if key[2] in versions else None
        cell.prompt_tokens, cell.completion_tokens = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if error is not None:
            cell.status, cell.error, cell.output, cell.grades = Cell.ERROR, error, "", {}
        else:
            cell.status, cell.error, cell.output = Cell.DONE, "", answer or ""
            cell.grades = graders.grade(cell.output, cell.case.expected, cell.variant.graders)
            cell.runs += 1
        changed.append(cell)
    fields = ["source", "ttft_ms", "latency_ms", "prompt_tokens", "completion_tokens", "status", "error", "output"]
    fields.append("version")
    Cell.objects.bulk_update(changed, [*fields, "grades", "runs"], batch_size=500)
    left = run.cells.filter(status__in=Cell.ACTIVE)
    missing = left.update(status=Cell.STOPPED, error=NO_RESULT)
    wall_ms = round((timezone.now() - run.started).total_seconds() * 1000)
    runs.end(run.pk, status=Run.STOPPED if missing else Run.DONE, wall_ms=wall_ms)
    return len(changed)


async def cancel(evaluation: Evaluation) -> None:
    await batches.cancel(evaluation.batch)
