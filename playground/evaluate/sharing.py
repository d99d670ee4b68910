"""An evaluation as a kind of share: the grid as it is, read (not forked); its connection is left out."""

from django.core.paginator import Paginator
from django.db import transaction
from django.urls import reverse

from playground.evaluate import services
from playground.evaluate.models import Cell, Evaluation, PromptVersion, TestCase, Variant, get_evaluation
from playground.evaluate.views import ROWS_PER_PAGE
from playground.sharing.kinds import Kind, NotShareable

CELL_FIELDS = ["status", "output", "error", "grades", "thumb", "note", "prompt_tokens", "completion_tokens"]
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


def evaluation_content(evaluation) -> dict:
    """The grid as it is: template, variables, variants, every row (at most MAX_CASES) with its cells, the summary.
    Its connection is left out: only model ids and parameters are shared."""
    variants, rows, cells = services.grid(evaluation)
    if any(c.status in Cell.ACTIVE for c in cells):
        raise NotShareable("This evaluation is still running: share it once its cells are finished.")
    latest = evaluation.latest_prompt()

    def prompt(version):
        return {"number": version.number, "system": version.system, "user": version.user} if version else None

    return {
        "title": evaluation.title,
        "prompt": prompt(latest),
        "columns": evaluation.columns,
        "variants": [
            {
                "label": v.label,
                "model": v.model,
                "prompt": prompt(v.prompt) if v.prompt_id else None,
                "params": {k: val for k, val in (v.params or {}).items() if val not in ("", None)},
                "graders": sorted(v.graders or {}),
                "grader_config": v.graders or {},
            }
            for v in variants
        ],
        "rows": [
            {
                "number": case.position + 1,
                "values": case.values,
                "expected": case.expected,
                "cells": [{name: getattr(c, name) for name in CELL_FIELDS} if c else None for c in row],
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


@transaction.atomic
def fork_evaluation(content: dict, user, connection) -> Evaluation:
    """An editable evaluation in the user's account: its prompt versions, variants (model, parameters, graders) and
    rows, with the shared results as its cells (a record: the next run replaces them)."""
    evaluation = Evaluation.objects.create(
        owner=user, title=f"{content['title']} (fork)"[:100], connection=connection, columns=content["columns"]
    )
    prompts = [content["prompt"], *(v["prompt"] for v in content["variants"])]
    versions = {}
    for prompt in sorted(filter(None, prompts), key=lambda p: p["number"]):
        if prompt["number"] not in versions:
            fields = {"number": prompt["number"], "system": prompt["system"], "user": prompt["user"]}
            versions[prompt["number"]] = PromptVersion.objects.create(evaluation=evaluation, **fields)
    variants = [
        Variant.objects.create(
            evaluation=evaluation,
            position=position,
            model=data["model"],
            prompt=versions[data["prompt"]["number"]] if data["prompt"] else None,
            params=data["params"],
            graders=data.get("grader_config") or {},  # a link frozen before graders were shared forks none
        )
        for position, data in enumerate(content["variants"])
    ]
    for row in content["rows"]:
        case = TestCase.objects.create(
            evaluation=evaluation, position=row["number"] - 1, values=row["values"], expected=row["expected"]
        )
        Cell.objects.bulk_create(
            Cell(evaluation=evaluation, case=case, variant=variant, **{name: cell.get(name) for name in CELL_FIELDS})
            for variant, cell in zip(variants, row["cells"], strict=False)
            if cell
        )
    return evaluation
