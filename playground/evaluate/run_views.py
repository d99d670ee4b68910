"""Kept runs: a run's page (its snapshot, pass rates and how the graders agree with people), two runs compared
case by case, and a person's rating of a run's cell. The grid of any run is the evaluation page's `?run=N`."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from playground.evaluate import compare as comparing
from playground.evaluate import exports, ratings, runs
from playground.evaluate.forms import RatingForm
from playground.evaluate.models import Comparison, Rating, get_evaluation
from playground.evaluate.sharing import ComparisonKind

PAIRS_PER_PAGE = 50
RATINGS_PER_PAGE = 100


def _run(evaluation, number):
    run = runs.get_run(evaluation, number)
    if run is None:
        raise Http404("This evaluation has no such run.")
    return run


@require_GET
def run_page(request, pk, number):
    evaluation = get_evaluation(request, pk)
    run = _run(evaluation, number)
    row = next(r for r in runs.rows(evaluation) if r.run.pk == run.pk)
    context = {"evaluation": evaluation, "run": run, "row": row, "agreement": ratings.agreement(run)}
    given = Rating.objects.filter(cell__run=run)
    context["ratings_count"] = given.count()
    context["raters"] = ratings.raters(run)
    shown = given.select_related("rater", "cell__case", "cell__variant")
    shown = shown.order_by("cell__case__position", "cell__variant__position", "created", "pk")
    context["ratings"] = Paginator(shown, RATINGS_PER_PAGE).get_page(request.GET.get("ratings"))
    context["may_rate"] = evaluation.may_rate(request.user)
    return render(request, "evaluate/run.html", context)


def _chosen(evaluation, query) -> tuple[dict, list[str], list[int]]:
    """Runs A and B as `?a=N&b=M` name them (by default the latest against the one before), the errors that say
    what is wrong with the choice, and the evaluation's run numbers (newest first)."""
    numbers = list(evaluation.runs.order_by("-number").values_list("number", flat=True))
    a_number = query.get("a") or (str(numbers[1]) if len(numbers) > 1 else "")
    b_number = query.get("b") or (str(numbers[0]) if numbers else "")
    chosen, errors = {"a_number": a_number, "b_number": b_number}, []
    if len(numbers) < 2:
        return chosen, ["compare: this evaluation has fewer than two runs; run it again first."], numbers
    for side, number in (("a", a_number), ("b", b_number)):
        run = runs.get_run(evaluation, number) if number.isdigit() else None
        if run is None:
            errors.append(f"run {side.upper()}: this evaluation has no run {number!r}; choose one listed.")
        chosen[side] = run
    if not errors and chosen["a"].pk == chosen["b"].pk:
        errors.append("compare: choose two different runs.")
    return chosen, errors, numbers


@require_GET
def compare(request, pk):
    """`?a=N&b=M`: run B against run A (by default the latest against the one before); `?show=` one outcome."""
    evaluation = get_evaluation(request, pk)
    chosen, errors, numbers = _chosen(evaluation, request.GET)
    context = {"evaluation": evaluation, "numbers": numbers, "outcomes": comparing.OUTCOMES, "errors": errors}
    context.update(a_number=chosen["a_number"], b_number=chosen["b_number"])
    if errors:
        return render(request, "evaluate/compare.html", context)
    result = comparing.compare(chosen["a"], chosen["b"])
    show = request.GET.get("show", "")
    if show and show not in comparing.OUTCOMES:
        context["errors"].append(f"show: choose one of {', '.join(comparing.OUTCOMES)}.")
        show = ""
    shown = [p for p in result.pairs if p.outcome == show] if show else result.pairs
    page = Paginator(shown, PAIRS_PER_PAGE).get_page(request.GET.get("page"))
    context.update(result=result, show=show, page=page, a=chosen["a"], b=chosen["b"])
    return render(request, "evaluate/compare.html", context)


@require_POST
def share_comparison(request, pk):
    """The comparison of `a` and `b` kept (once per pair) and its share page opened, where a link is made."""
    evaluation = get_evaluation(request, pk)
    chosen, errors, _ = _chosen(evaluation, request.POST)
    if errors:
        raise Http404(" ".join(errors))
    kept, _ = Comparison.objects.get_or_create(evaluation=evaluation, a=chosen["a"], b=chosen["b"])
    return redirect("sharing:source", kind=ComparisonKind.name, pk=kept.pk)


@require_GET
def export_comparison(request, pk, kind):
    """Run B against run A as CSV or JSONL, every line naming both runs."""
    evaluation = get_evaluation(request, pk)
    chosen, errors, _ = _chosen(evaluation, request.GET)
    if errors:
        raise Http404(" ".join(errors))
    a, b = chosen["a"], chosen["b"]
    return exports.download(
        evaluation.title,
        f"-run-{b.number}-vs-{a.number}",
        kind,
        csv=lambda: exports.comparison_csv(a, b),
        jsonl=lambda: exports.comparison_jsonl(a, b),
    )


@require_POST
def rate(request, pk, cell_pk):
    evaluation = get_evaluation(request, pk)
    cell = get_object_or_404(evaluation.cells.select_related("run"), pk=cell_pk)
    if not evaluation.may_rate(request.user):
        raise Http404("You cannot rate this evaluation.")
    form = RatingForm(request.POST)
    error = ""
    if form.is_valid():
        ratings.rate(cell, request.user, **form.values())
    else:
        error = "; ".join(str(e) for errors in form.errors.values() for e in errors)
    if request.htmx:
        cell = evaluation.cells.prefetch_related("ratings__rater").get(pk=cell.pk)
        context = {"cell": cell, "rate_error": error, "can_edit": evaluation.may_edit(request.user)}
        return render(request, "evaluate/_cell.html", context)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, "Rating saved.")
    return redirect(reverse("evaluate:detail", args=[pk]) + f"?run={cell.run.number}#cell-{cell.pk}")
