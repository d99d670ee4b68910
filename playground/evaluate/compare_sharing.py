"""Two runs compared, as a kind of share: frozen when the link is made (the summary line, the runs' identity, the
per-grader deltas and every compared answer of both runs); its page filters by outcome and shows the two answers
side by side with their text diff, read-only. People's ratings and who started the runs are left out."""

from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404
from django.urls import reverse

from playground.evaluate import compare
from playground.evaluate.models import Cell, Comparison, Evaluation, Run
from playground.prompts.diffing import line_diff
from playground.sharing.kinds import Kind, NotShareable

PAIRS_PER_PAGE = 50


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
        page = Paginator(pairs, PAIRS_PER_PAGE).get_page(request.GET.get("page"))
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
