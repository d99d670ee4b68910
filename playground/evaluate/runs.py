"""Kept runs: each run of the grid (live or batch) makes a Run with its own cells, so re-running never changes an
earlier one. A run of part of the grid (a row, a column, a cell, the unfinished ones) carries the other cells over
from the run before, so every run is a whole grid and the latest one is what the page shows."""

from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from playground.evaluate.models import Cell, Evaluation, Run
from playground.evaluate.services import prompt_of

# What a carried cell keeps of the run before (everything but its place and its run).
CARRIED = ["status", "source", "output", "error", "prompt_tokens", "completion_tokens", "ttft_ms", "latency_ms"]
CARRIED += ["grades", "runs", "version_id", "heartbeat"]


def snapshot(evaluation: Evaluation) -> list[dict]:
    """The variants as a run begins: label, model, parameters, the prompt version each sends, graders."""
    latest = evaluation.latest_prompt()
    shown = []
    for variant in evaluation.variants.select_related("prompt__prompt"):
        version = prompt_of(variant, latest)
        shown.append(
            {
                "label": variant.label,
                "variant": variant.pk,
                "model": variant.model,
                "params": dict(variant.params or {}),
                "prompt_version": version.pk if version else None,
                "prompt_ref": version.ref if version else "",
                "graders": dict(variant.graders or {}),
            }
        )
    return shown


def get_run(evaluation: Evaluation, number) -> Run | None:
    """The evaluation's run `number` (the latest when it is blank), None when it has no such run."""
    runs = evaluation.runs.select_related("started_by")
    if number in (None, ""):
        return runs.order_by("-number").first()
    try:
        return runs.filter(number=int(number)).first()
    except (TypeError, ValueError):
        return None


@transaction.atomic
def _new_run(evaluation: Evaluation, **fields) -> Run:
    number = (evaluation.runs.aggregate(top=Max("number"))["top"] or 0) + 1
    return Run.objects.create(
        evaluation=evaluation,
        number=number,
        variants=snapshot(evaluation),
        dataset_version_id=evaluation.dataset_version_id,
        **fields,
    )


def begin(
    evaluation: Evaluation, *, user, keys=None, source: str = Run.LIVE, scope: str = "all"
) -> tuple[Run, list[int]]:
    """A new run: the (case, variant) pairs of `keys` (None: every one) queued, the others carried from the run
    before (or empty). Returns the run and its queued cells' ids, row by row."""
    previous = evaluation.latest_run()
    for _ in range(3):  # two runs begun at the same moment: the second takes the next number
        try:
            run = _new_run(evaluation, started_by=user, source=source, scope=scope)
            break
        except IntegrityError:
            continue
    else:
        raise IntegrityError("run: could not number the new run.")
    before = {(c.case_id, c.variant_id): c for c in previous.cells.all()} if previous else {}
    now, cells = timezone.now(), []
    variants = list(evaluation.variants.values_list("pk", flat=True))
    for case in evaluation.cases.values_list("pk", flat=True):
        for variant in variants:
            cell = Cell(evaluation=evaluation, run=run, case_id=case, variant_id=variant)
            if keys is None or (case, variant) in keys:
                cell.status, cell.heartbeat = Cell.QUEUED, now
            elif (case, variant) in before:
                for name in CARRIED:
                    setattr(cell, name, getattr(before[(case, variant)], name))
            cells.append(cell)
    Cell.objects.bulk_create(cells, batch_size=500)
    queued = [
        c.pk for c in run.cells.filter(status=Cell.QUEUED).order_by("case__position", "variant__position").only("pk")
    ]
    run.cells_run = len(queued)
    run.save(update_fields=["cells_run"])
    return run, queued


def end(run_id: int, *, status: str, wall_ms: int | None = None) -> None:
    fields = {"status": status, "ended": timezone.now()}
    if wall_ms is not None:
        fields["wall_ms"] = wall_ms
    Run.objects.filter(pk=run_id, status=Run.RUNNING).update(**fields)


# ---------------------------------------------------------------- the runs list


@dataclass
class RunRow:
    """One line of the runs list: the run, its pass rate per grader, its tokens (the judge's too)."""

    run: Run
    done: int = 0
    errors: int = 0
    tokens: int = 0
    rates: dict = field(default_factory=dict)  # grader kind -> [passed, graded]

    def pass_rates(self) -> list[tuple[str, str, int, int]]:
        return [(kind, f"{round(100 * p / n)}%" if n else "—", p, n) for kind, (p, n) in sorted(self.rates.items())]


def rows(evaluation: Evaluation) -> list[RunRow]:
    """Every run of the evaluation, newest first, with what its cells add up to."""
    runs = list(evaluation.runs.select_related("started_by").order_by("-number"))
    by_run = {run.pk: RunRow(run) for run in runs}
    fields = ("run_id", "status", "grades", "prompt_tokens", "completion_tokens")
    for run_id, status, grades, prompt, completion in Cell.objects.filter(run__in=runs).values_list(*fields):
        row = by_run[run_id]
        row.done += status == Cell.DONE
        row.errors += status == Cell.ERROR
        row.tokens += (prompt or 0) + (completion or 0)
        for kind, grade in (grades or {}).items():
            rate = row.rates.setdefault(kind, [0, 0])
            rate[0] += bool(grade.get("pass"))
            rate[1] += 1
            row.tokens += (grade.get("prompt_tokens") or 0) + (grade.get("completion_tokens") or 0)
    return [by_run[run.pk] for run in runs]
