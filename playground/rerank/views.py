from asgiref.sync import sync_to_async
from django.http import HttpResponse
from django.shortcuts import aget_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import push_url, reswap, retarget

from playground.rerank import services
from playground.rerank.documents import as_text
from playground.rerank.forms import CompareForm, RerankForm
from playground.rerank.models import RerankRun, get_run
from playground.upstream.errors import UpstreamError

SHOWN_ROWS = 500


def _context(request, form, run=None, error=None) -> dict:
    return {
        "form": form,
        "run": run,
        "rows": run.ranked()[:SHOWN_ROWS] if run else [],
        "shown_rows": SHOWN_ROWS,
        "error": error,
        "compare_form": CompareForm(run=run) if run else None,
        "history": RerankRun.objects.for_user(request.user).only("id", "model", "query", "created")[:50],
    }


@sync_to_async
def _render(request, template: str, form, run=None, error=None) -> HttpResponse:
    return render(request, template, _context(request, form, run, error))


def _initial_from(run: RerankRun) -> dict:
    text, fmt = as_text(run.documents)
    return {
        "connection": run.connection_id,
        "model": run.model,
        "query": run.query,
        "documents": text,
        "documents_format": fmt,
        "params": run.params,
    }


@require_GET
def index(request):
    initial = {key: request.GET[key] for key in ("connection", "model") if request.GET.get(key)}
    form = RerankForm(user=request.user, initial=initial)
    return render(request, "rerank/index.html", _context(request, form))


@require_GET
def detail(request, pk):
    run = get_run(request, pk)
    form = RerankForm(user=request.user, initial=_initial_from(run))
    return render(request, "rerank/index.html", _context(request, form, run))


@require_GET
def fields(request):
    """The model picker and the parameter fields for the chosen connection and model (htmx)."""
    form = RerankForm(user=request.user, initial={key: request.GET.get(key) for key in ("connection", "model")})
    return render(request, "rerank/index.html#model-fields", {"form": form})


@require_POST
async def run(request):
    user = await request.auser()
    form = await sync_to_async(RerankForm)(request.POST, request.FILES, user=user)
    if not await sync_to_async(form.is_valid)():
        response = await _render(request, "rerank/index.html#rerank-form", form)
        return reswap(retarget(response, "#rerank-form"), "outerHTML") if request.htmx else response
    try:
        new_run = await services.create_run(
            owner=user,
            connection=form.chosen_connection,
            model=form.chosen_model.model_id,
            query=form.cleaned_data["query"],
            documents=form.cleaned_data["document_list"],
            params=form.params.request_values(),
        )
    except UpstreamError as error:
        template = "rerank/index.html#results" if request.htmx else "rerank/index.html"
        return await _render(request, template, form, error=error)
    if request.htmx:
        response = await _render(request, "rerank/index.html#results", form, new_run)
        return push_url(response, reverse("rerank:detail", args=[new_run.pk]))
    return redirect("rerank:detail", new_run.pk)


@require_POST
def delete(request, pk):
    get_run(request, pk).delete()
    return redirect("rerank:index")


@require_POST
async def compare(request, pk):
    user = await request.auser()
    base = await aget_object_or_404(RerankRun.objects.for_user(user).select_related("owner", "connection"), pk=pk)
    form = await sync_to_async(CompareForm)(request.POST, run=base)
    if not form.is_valid():
        return redirect("rerank:detail", base.pk)
    try:
        other = await services.compare(run=base, model=form.models[form.cleaned_data["model"]])
    except UpstreamError as error:
        form = await sync_to_async(RerankForm)(user=user, initial=_initial_from(base))
        return await _render(request, "rerank/index.html", form, base, error=error)
    return redirect("rerank:comparison", base.pk, other.pk)


@require_GET
def comparison(request, pk, other_pk):
    base, other = get_run(request, pk), get_run(request, other_pk)
    return render(
        request,
        "rerank/compare.html",
        {
            "base": base,
            "other": other,
            "base_rows": base.ranked()[:SHOWN_ROWS],
            "other_rows": services.rank_changes(base, other)[:SHOWN_ROWS],
            "same_inputs": base.query == other.query and base.documents == other.documents,
        },
    )
