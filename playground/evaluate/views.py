from asgiref.sync import async_to_sync
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from playground.evaluate import batch as batch_run
from playground.evaluate import cases, exports, graders, runs, services, templating, testcases
from playground.evaluate.forms import (
    MAX_CONCURRENCY,
    EvaluationForm,
    ImportForm,
    PromptForm,
    VariantForm,
    chat_models,
    variant_params_form,
)
from playground.evaluate.models import MAX_CASES, MAX_VARIANTS, Evaluation, get_editable, get_evaluation
from playground.prompts.models import PromptVersion
from playground.upstream.errors import UpstreamError

ROWS_PER_PAGE = 50
GAPS_SHOWN = 10


EDITOR_ANCHORS = ("template", "variants", "cases")


def _back(evaluation: Evaluation, anchor: str = ""):
    """The evaluation's page: the editor after an edit of the template, variants or cases; the grid otherwise."""
    url = reverse("evaluate:detail", args=[evaluation.pk])
    if anchor in EDITOR_ANCHORS:
        url += "?view=editor"
    return redirect(url + (f"#{anchor}" if anchor else ""))


@require_GET
def index(request):
    evaluations = Evaluation.objects.for_user(request.user)
    form = EvaluationForm(user=request.user, initial={"title": "Untitled evaluation"})
    return render(request, "evaluate/index.html", {"evaluations": evaluations, "form": form})


@require_POST
def create(request):
    form = EvaluationForm(request.POST, user=request.user)
    if not form.is_valid():
        evaluations = Evaluation.objects.for_user(request.user)
        return render(request, "evaluate/index.html", {"evaluations": evaluations, "form": form})
    evaluation = services.create(user=request.user, **form.cleaned_data)
    return _back(evaluation)


def _variant_panels(evaluation, variants, models, posted=None):
    by_id = {m.model_id: m for m in models}
    panels = []
    for variant in variants:
        bound = posted if posted and posted[0] == variant.pk else None
        if bound:
            form, params, grader_form = bound[1], bound[2], bound[3]
        else:
            form = VariantForm(
                evaluation=evaluation,
                models=list(by_id),
                current=variant.prompt,
                initial={"model": variant.model, "prompt": variant.prompt_id},
                prefix=f"v{variant.pk}",
            )
            prefix = f"p{variant.pk}"
            stored = {f"{prefix}-{name}": value for name, value in variant.params.items()}
            params = variant_params_form(by_id.get(variant.model), stored, prefix)
            params.is_valid()
            grader_form = graders.GradersForm(
                initial=graders.initial_of(variant.graders), prefix=f"g{variant.pk}", models=list(by_id)
            )
        panels.append({"variant": variant, "form": form, "params": params, "graders": grader_form})
    return panels


def _page(request, evaluation, *, prompt_form=None, import_errors=None, posted=None, status=200, **extra):
    latest = evaluation.latest_prompt()
    can_edit = evaluation.may_edit(request.user)  # a team's members see the grid, its runs, and rate answers
    # The compact grid is the default; the long form is the editor (and shows what an edit got wrong).
    editing = can_edit and (request.GET.get("view") == "editor" or bool(prompt_form or import_errors or posted))
    # Django renders ~4,000 cells in seconds: the grid and the table show one page of rows at a time.
    pages = Paginator(evaluation.cases.all(), ROWS_PER_PAGE)
    page = pages.get_page(request.GET.get("page"))
    run_rows = runs.rows(evaluation)
    latest_run = run_rows[0].run if run_rows else None
    run = _shown_run(request, evaluation) or latest_run
    variants, rows, cells = services.grid(evaluation, page.object_list, run)
    models = chat_models(evaluation.connection)
    prompt_form = prompt_form or PromptForm(
        initial={"system": latest.system, "user": latest.template} if latest else {}
    )
    system = prompt_form["system"].value() or ""
    user = prompt_form["user"].value() or ""
    used = templating.variables(system, user)
    gaps = services.gaps(evaluation, used)
    missing = sorted({name for _, names in gaps for name in names})
    context = {
        "evaluation": evaluation,
        "can_edit": can_edit,
        "view": "editor" if editing else "grid",
        "prompt_form": prompt_form,
        "versions": list(evaluation.versions()),
        "latest": latest,
        "used": used,
        "unknown": [name for name in used if name not in evaluation.columns],
        "missing": missing,
        "gaps": gaps[:GAPS_SHOWN],
        "more_gaps": max(0, len(gaps) - GAPS_SHOWN),
        "gap_count": len(gaps),
        "system_segments": templating.segments(system),
        "user_segments": templating.segments(user),
        "variants": variants,
        "panels": _variant_panels(evaluation, variants, models, posted),
        "rows": rows,
        "page": page,
        "row_count": pages.count,
        "summaries": services.summaries(variants, cells),
        "import_form": ImportForm(),
        "import_errors": import_errors,
        "max_cases": MAX_CASES,
        "max_variants": MAX_VARIANTS,
        "can_add_variant": len(variants) < MAX_VARIANTS,
        "concurrency": evaluation.concurrency,
        "max_concurrency": MAX_CONCURRENCY,
        "no_models": not models,
        "judged": any("judge" in v.graders for v in variants),
        "run": run,
        "latest_run": latest_run,
        "earlier": run is not None and run != latest_run,  # the grid shows an earlier run than the latest
        "run_rows": run_rows,
        **extra,
    }
    return render(request, "evaluate/detail.html", context, status=status)


def _shown_run(request, evaluation):
    """The run `?run=N` asks for (404 when the evaluation has no such run), or None for the latest."""
    number = request.GET.get("run")
    if not number:
        return None
    run = runs.get_run(evaluation, number)
    if run is None:
        raise Http404("This evaluation has no such run.")
    return run


@require_GET
def detail(request, pk):
    return _page(request, get_evaluation(request, pk))


@require_POST
def delete(request, pk):
    evaluation = get_editable(request, pk)
    evaluation.delete()
    messages.success(request, f"Evaluation “{evaluation.title}” deleted.")
    return redirect("evaluate:index")


@require_POST
def save_prompt(request, pk):
    evaluation = get_editable(request, pk)
    form = PromptForm(request.POST)
    if not form.is_valid():
        return _page(request, evaluation, prompt_form=form)
    version = services.save_prompt(evaluation, **form.cleaned_data, author=request.user)
    messages.success(request, f"Prompt saved as {version.ref}.")
    return _back(evaluation, "template")


@require_GET
def diff(request, pk):
    evaluation = get_evaluation(request, pk)
    versions = {str(v.number): v for v in evaluation.versions()}
    a, b = versions.get(request.GET.get("a", "")), versions.get(request.GET.get("b", ""))
    if a is None or b is None:
        raise Http404("No such prompt version.")
    context = {"evaluation": evaluation, "a": a, "b": b, "lines": services.diff(a, b), "versions": versions.values()}
    return render(request, "evaluate/diff.html", context)


@require_POST
def save_cases(request, pk):
    evaluation = get_editable(request, pk)
    errors = testcases.save_typed_cases(evaluation, request.POST)
    if errors:
        return _page(request, evaluation, import_errors=errors)
    if "add" in request.POST:
        try:
            testcases.add_case(evaluation)
        except services.EvaluationError as exc:
            return _page(request, evaluation, import_errors=[str(exc)])
    messages.success(request, "Test cases saved.")
    return _back(evaluation, "cases")


@require_POST
def delete_case(request, pk, case_pk):
    evaluation = get_editable(request, pk)
    get_object_or_404(evaluation.cases, pk=case_pk)
    testcases.remove(evaluation.cases.filter(pk=case_pk))
    testcases.cases_edited(evaluation)
    return _back(evaluation, "cases")


@require_POST
def import_cases(request, pk):
    evaluation = get_editable(request, pk)
    form = ImportForm(request.POST, request.FILES)
    form.is_valid()
    text, kind = form.cleaned_data.get("text") or "", "auto"
    upload = form.cleaned_data.get("file")
    if upload:
        if upload.size > cases.MAX_IMPORT_BYTES:
            return _page(request, evaluation, import_errors=[f"file: at most {cases.MAX_IMPORT_BYTES} bytes."])
        text = upload.read().decode("utf-8", errors="replace")
        kind = "jsonl" if upload.name.lower().endswith((".jsonl", ".json", ".ndjson")) else "csv"
    parsed = cases.parse(text, kind)
    if parsed.errors:
        return _page(request, evaluation, import_errors=cases.shown_errors(parsed.errors))
    try:
        count = testcases.import_cases(evaluation, parsed, append=form.cleaned_data.get("mode") == "append")
    except services.EvaluationError as exc:
        return _page(request, evaluation, import_errors=[str(exc)])
    messages.success(request, f"Imported {count} row{'s' if count != 1 else ''}.")
    return _back(evaluation, "cases")


@require_POST
def add_variant(request, pk):
    evaluation = get_editable(request, pk)
    try:
        services.add_variant(evaluation)
    except services.EvaluationError as exc:
        messages.error(request, str(exc))
    return _back(evaluation, "variants")


@require_POST
def save_variant(request, pk, variant_pk):
    evaluation = get_editable(request, pk)
    variant = get_object_or_404(evaluation.variants, pk=variant_pk)
    models = {m.model_id: m for m in chat_models(evaluation.connection)}
    form = VariantForm(
        request.POST, evaluation=evaluation, models=list(models), current=variant.prompt, prefix=f"v{variant.pk}"
    )
    model = models.get(request.POST.get(f"v{variant.pk}-model"))
    params = variant_params_form(model, request.POST, f"p{variant.pk}")
    grader_form = graders.GradersForm(request.POST, prefix=f"g{variant.pk}", models=list(models))
    valid = [form.is_valid(), params.is_valid(), grader_form.is_valid()]
    if not all(valid):
        return _page(request, evaluation, posted=(variant.pk, form, params, grader_form))
    variant.model = form.cleaned_data["model"]
    chosen = form.cleaned_data["prompt"]
    variant.prompt = PromptVersion.objects.filter(pk=chosen).first() if chosen else None  # a listed choice
    variant.params = {name: params[name].value() for name in params.fields if params[name].value() not in (None, "")}
    variant.graders = grader_form.config()
    variant.save()
    services.regrade(evaluation, variant)
    messages.success(request, f"Variant {variant.label} saved.")
    return _back(evaluation, "variants")


@require_POST
def delete_variant(request, pk, variant_pk):
    evaluation = get_editable(request, pk)
    get_object_or_404(evaluation.variants, pk=variant_pk).delete()
    return _back(evaluation, "variants")


@require_POST
def submit_batch(request, pk):
    evaluation = get_editable(request, pk)
    if evaluation.connection is None:
        return _page(request, evaluation, batch_error={"title": "No connection", "message": "connection: pick one."})
    try:
        created = async_to_sync(batch_run.submit)(evaluation, user=request.user)
    except batch_run.BatchRefused as exc:
        return _page(request, evaluation, batch_error=exc.shown)
    messages.success(request, f"Batch {created.remote_id} created with {created.request_count} requests.")
    return _back(evaluation, "batch")


def _with_batch(request, pk) -> Evaluation:
    """The user's evaluation with its batch and the batch's connection loaded (the async services read them)."""
    evaluation = get_editable(request, pk)
    if evaluation.batch is None or evaluation.batch.connection is None:
        raise Http404("This evaluation has no batch.")
    return evaluation


@require_GET
def batch_status(request, pk):
    evaluation = _with_batch(request, pk)
    error = None
    try:
        async_to_sync(batch_run.refresh)(evaluation)
    except UpstreamError as exc:
        error = exc.as_dict()
    if request.htmx and not (evaluation.batch.is_terminal and evaluation.batch_joined):
        return render(request, "evaluate/_batch.html", {"evaluation": evaluation, "batch_error": error})
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Refresh"] = "true"  # the grid has its results now
        return response
    return _back(evaluation, "batch")


@require_POST
def cancel_batch(request, pk):
    evaluation = _with_batch(request, pk)
    try:
        async_to_sync(batch_run.cancel)(evaluation)
    except UpstreamError as exc:
        messages.error(request, f"{exc.title}: {exc.message}")
    return _back(evaluation, "batch")


@require_GET
def export(request, pk, kind):
    evaluation = get_evaluation(request, pk)
    run = _shown_run(request, evaluation) or evaluation.latest_run()
    return exports.download(
        evaluation.title,
        f"-run-{run.number}" if run is not None else "",
        kind,
        csv=lambda: exports.export_csv(evaluation, run),
        jsonl=lambda: exports.export_jsonl(evaluation, run),
    )
