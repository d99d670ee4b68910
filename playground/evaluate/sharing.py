"""An evaluation as a kind of share: the grid as it is, read (not forked); its connection is left out. Also one
kept run (RunKind) and two runs compared (ComparisonKind)."""

from django.core.paginator import Paginator
from django.db import transaction
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone

from playground.evaluate import compare, runs, services
from playground.evaluate.models import Cell, Comparison, Evaluation, Run, TestCase, Variant, get_evaluation
from playground.evaluate.views import ROWS_PER_PAGE
from playground.prompts.diffing import line_diff
from playground.prompts.drafts import Draft
from playground.prompts.models import PromptVersion
from playground.sharing.kinds import Kind, NotShareable

CELL_FIELDS = ["status", "output", "error", "grades", "prompt_tokens", "completion_tokens"]
CELL_FIELDS += ["ttft_ms", "latency_ms"]


class EvaluationKind(Kind):
    name, label, plural = "evaluation", "Evaluation", "Evaluations"
    model, template = "evaluate.Evaluation", "evaluate/shared.html"
    library = False  # shared "Team members only", it is listed in the library, but never moved there
    fork_words = ", its template, variants, cases and graders editable, its results kept as a record,"

    def get(self, request, pk):
        return get_evaluation(request, pk)

    def title(self, item):
        return f"Evaluation: {item.title}"

    def url(self, item):
        return reverse("evaluate:detail", args=[item.pk])

    def freeze(self, item, files):
        return evaluation_content(item)

    def describe(self, content):
        rows, variants = len(content["rows"]), len(content["variants"])
        return f"An evaluation of {rows} row{'s' * (rows != 1)} × {variants} variant{'s' * (variants != 1)}."

    def model_of(self, content):
        return next((v["model"] for v in content["variants"]), "")

    def fork(self, share, user, connection, offered):
        return reverse("evaluate:detail", args=[fork_evaluation(share.content, user, connection).pk])

    def show(self, share, content, request):
        # Like the evaluation page: one page of rows at a time; the summary covers every row.
        content["page"] = Paginator(content["rows"], ROWS_PER_PAGE).get_page(request.GET.get("page"))
        return content


class RunKind(EvaluationKind):
    """One kept run of an evaluation: its grid, its variants as it began, and how it compares with the run
    before it (the summary and every answer that is not unchanged)."""

    name, label, plural = "evaluation-run", "Evaluation run", "Evaluation runs"
    model = "evaluate.Run"

    def get(self, request, pk):
        evaluations = Evaluation.objects.for_user(request.user)
        runs_ = Run.objects.filter(evaluation__in=evaluations).select_related("evaluation__connection")
        return get_object_or_404(runs_, pk=pk)

    def title(self, item):
        return f"Evaluation: {item.evaluation.title}, run {item.number}"

    def url(self, item):
        return reverse("evaluate:run", args=[item.evaluation_id, item.number])

    def connection(self, item):
        return item.evaluation.connection

    def freeze(self, item, files):
        return run_content(item)

    def describe(self, content):
        return f"Run {content['run']['number']} of an evaluation. " + super().describe(content)


def run_content(run: Run) -> dict:
    """A run as shared: its evaluation's grid of this run, its identity and its comparison with the run before."""
    content = evaluation_content(run.evaluation, run)
    content["run"] = {
        "number": run.number,
        "started": run.started.isoformat(),
        "source": run.source,
        "status": run.status,
        "wall_ms": run.wall_ms,
    }
    before = run.evaluation.runs.filter(number__lt=run.number).order_by("-number").first()
    if before is not None:
        result = compare.compare(before, run)
        content["comparison"] = {
            "against": before.number,
            "summary": result.summary(),
            "only_a": result.only_a,
            "only_b": result.only_b,
            "pairs": [
                {
                    "row": p.case.position + 1,
                    "label": p.label,
                    "outcome": p.outcome,
                    "before": p.a.output or p.a.error,
                    "after": p.b.output or p.b.error,
                }
                for p in result.pairs
                if p.outcome != compare.UNCHANGED
            ],
        }
    return content


def evaluation_content(evaluation, run=None) -> dict:
    """The grid as it is (of `run`, default the latest): template, variables, variants, every row (at most
    MAX_CASES) with its cells, the summary. Its connection is left out: only model ids and parameters are shared.
    A run's variants are its snapshot, each with the prompt version it sent."""
    variants, rows, cells = services.grid(evaluation, run=run)
    if any(c.status in Cell.ACTIVE for c in cells):
        raise NotShareable("This evaluation is still running: share it once its cells are finished.")
    latest = evaluation.latest_prompt()

    def prompt(version):
        if version is None:
            return None
        own = version.prompt_id == evaluation.prompt_id
        return {
            "number": version.number,
            "name": version.prompt.name,
            "own": own,  # a version of the evaluation's own prompt (else of another library prompt)
            "system": version.system,
            "shots": version.shots,
            "user": version.template,
        }

    if run is None:
        shown = [
            {"label": v.label, "model": v.model, "prompt": v.prompt, "params": v.params, "graders": v.graders}
            for v in variants
        ]
    else:
        sent = PromptVersion.objects.select_related("prompt").in_bulk(run.prompt_versions())
        shown = [{**v, "prompt": sent.get(v.get("prompt_version"))} for v in run.variants]
    return {
        "title": evaluation.title,
        "prompt": prompt(latest),
        "columns": evaluation.columns,
        "variants": [
            {
                "label": v["label"],
                "model": v["model"],
                "prompt": prompt(v["prompt"]),
                "params": {k: val for k, val in (v["params"] or {}).items() if val not in ("", None)},
                "graders": sorted(v["graders"] or {}),
                "grader_config": v["graders"] or {},
            }
            for v in shown
        ],
        "rows": [
            {
                "number": case.position + 1,
                "values": case.values,
                "expected": case.expected,
                "cells": [_cell(c) if c else None for c in row],
            }
            for case, row in rows
        ],
        "summaries": [
            {
                "label": s.variant.label,
                "score": s.score,
                **{k: getattr(s, k) for k in ("done", "errors", "graded", "passed", "up", "down")},
                **{k: getattr(s, k) for k in ("latency", "ttft", "tokens")},
            }
            for s in services.summaries(variants, cells)
        ],
    }


def _cell(cell: Cell) -> dict:
    """A cell as shared: its results, and people's ratings without their names."""
    shared = {name: getattr(cell, name) for name in CELL_FIELDS}
    if cell.pk:
        shared["ratings"] = [{"pass": r.passed, "score": r.score} for r in cell.ratings.all()]
    return shared


@transaction.atomic
def fork_evaluation(content: dict, user, connection) -> Evaluation:
    """An editable evaluation in the user's account: its prompt (a new library prompt of the user's, with the
    shared versions), variants (model, parameters, graders) and rows, with the shared results as its run 1 (the
    next run is run 2)."""
    evaluation = Evaluation.objects.create(
        owner=user, title=f"{content['title']} (fork)"[:100], connection=connection, columns=content["columns"]
    )
    versions = fork_versions(evaluation, content, user)
    variants = [
        Variant.objects.create(
            evaluation=evaluation,
            position=position,
            model=data["model"],
            prompt=versions.get(_key(data["prompt"])) if data["prompt"] else None,
            params=data["params"],
            graders=data.get("grader_config") or {},  # a link frozen before graders were shared forks none
        )
        for position, data in enumerate(content["variants"])
    ]
    run = Run.objects.create(
        evaluation=evaluation,
        number=1,
        started_by=user,
        status=Run.DONE,
        ended=timezone.now(),
        variants=runs.snapshot(evaluation),
    )
    for row in content["rows"]:
        case = TestCase.objects.create(
            evaluation=evaluation, position=row["number"] - 1, values=row["values"], expected=row["expected"]
        )
        Cell.objects.bulk_create(
            Cell(
                evaluation=evaluation,
                run=run,
                case=case,
                variant=variant,
                **{name: cell.get(name) for name in CELL_FIELDS},
            )
            for variant, cell in zip(variants, row["cells"], strict=False)
            if cell
        )
    return evaluation


def _key(prompt: dict) -> tuple:
    return (prompt.get("own", True), prompt.get("name", ""), prompt["number"])


def fork_versions(evaluation: Evaluation, content: dict, user) -> dict:
    """The shared versions saved in the fork's library prompt, oldest first: the evaluation's own ones, then
    those of other prompts its variants used (a pinned version of another prompt becomes one of the fork's, as
    the forker may not see that prompt). Returns (own, name, number) -> the new version."""
    prompts = [content["prompt"], *(v["prompt"] for v in content["variants"])]
    ordered = sorted(filter(None, prompts), key=lambda p: (not p.get("own", True), p["number"]))
    versions = {}
    for prompt in ordered:
        if _key(prompt) not in versions:
            draft = Draft(system=prompt["system"], shots=list(prompt.get("shots") or []), template=prompt["user"])
            draft.message = f"Forked from v{prompt['number']}" + (
                "" if prompt.get("own", True) else f" of {prompt.get('name')}"
            )
            versions[_key(prompt)] = services.new_version(evaluation, system="", user="", author=user, draft=draft)
    if not versions:
        services.new_version(evaluation, system="", user=services.EXAMPLE_USER, author=user)
    return versions


# ---------------------------------------------------------------- two runs compared

# The shared comparison's page: a page of answers at a time (the compare page's size). Its content is frozen when
# the link is made (the summary line, the runs' identity, the per-grader deltas and every compared answer of both
# runs); its page filters by outcome and shows the two answers side by side with their text diff, read-only.
# People's ratings and who started the runs are left out.
COMPARED_PER_PAGE = 50


class ComparisonKind(Kind):
    name, label, plural = "evaluation-comparison", "Run comparison", "Run comparisons"
    model, template = "evaluate.Comparison", "evaluate/shared_compare.html"
    library = False
    forkable = False

    def get(self, request, pk):
        evaluations = Evaluation.objects.for_user(request.user)
        found = Comparison.objects.filter(evaluation__in=evaluations).select_related("evaluation__connection", "a", "b")
        return get_object_or_404(found, pk=pk)

    def title(self, item):
        return f"Evaluation: {item.evaluation.title}, run {item.b.number} vs run {item.a.number}"

    def url(self, item):
        return reverse("evaluate:compare", args=[item.evaluation_id]) + f"?a={item.a.number}&b={item.b.number}"

    def connection(self, item):
        return item.evaluation.connection

    def freeze(self, item, files):
        return comparison_content(item.a, item.b)

    def describe(self, content):
        return f"{content['title']}: two runs of an evaluation compared answer by answer."

    def model_of(self, content):
        return next((v["model"] for v in content["b"]["variants"]), "")

    def show(self, share, content, request):
        """One outcome (`?show=`) or all, a page of answers at a time, each with its text diff."""
        show = request.GET.get("show", "")
        if show not in compare.OUTCOMES:
            show = ""
        pairs = [p for p in content["pairs"] if p["outcome"] == show] if show else content["pairs"]
        page = Paginator(pairs, COMPARED_PER_PAGE).get_page(request.GET.get("page"))
        for pair in page.object_list:
            if pair["a"]["output"] != pair["b"]["output"]:
                pair["diff"] = line_diff(pair["a"]["output"], pair["b"]["output"])
        counts = content.get("counts") or {}
        filters = [(o, counts.get(o, 0)) for o in compare.OUTCOMES]
        return {**content, "page": page, "show": show, "filters": filters, "total": len(content["pairs"])}


def _run(run: Run) -> dict:
    return {
        "number": run.number,
        "started": run.started.isoformat(),
        "source": run.source,
        "status": run.status,
        "dataset_version": run.dataset_version.ref if run.dataset_version_id else "",
        "variants": [{"label": v["label"], "model": v["model"], "prompt_ref": v["prompt_ref"]} for v in run.variants],
    }


def _answer(cell: Cell) -> dict:
    return {"status": cell.status, "output": cell.output, "error": cell.error, "passed": cell.passed}


def comparison_content(a: Run, b: Run) -> dict:
    """Run B against run A as shared (what compare.compare finds, in plain JSON)."""
    if a.status == Run.RUNNING or b.status == Run.RUNNING:
        raise NotShareable("One of these runs is still running: share the comparison once both are finished.")
    result = compare.compare(a, b)
    return {
        "title": a.evaluation.title,
        "a": _run(a),
        "b": _run(b),
        "summary": result.summary(),
        "counts": {o: result.counts[o] for o in compare.OUTCOMES},
        "shared_rows": result.shared_rows,
        "only_a": result.only_a,
        "only_b": result.only_b,
        "graders": [
            {
                "kind": g.kind,
                "a_rate": g.a_rate,
                "b_rate": g.b_rate,
                "rate_delta": g.rate_delta,
                "a_mean": g.a_mean,
                "b_mean": g.b_mean,
                "score_delta": g.score_delta,
                **{k: getattr(g, k) for k in ("a_passed", "a_graded", "b_passed", "b_graded")},
            }
            for g in result.graders
        ],
        "pairs": [
            {
                "row": p.case.position + 1,
                "label": p.label,
                "outcome": p.outcome,
                "values": p.case.values,
                "moves": [
                    {"kind": m.kind, "a_pass": m.a_pass, "b_pass": m.b_pass, "a_score": m.a_score, "b_score": m.b_score}
                    for m in p.moves
                ],
                "a": _answer(p.a),
                "b": _answer(p.b),
            }
            for p in result.pairs
        ],
    }
