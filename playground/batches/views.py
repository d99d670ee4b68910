from asgiref.sync import sync_to_async
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import aget_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST, require_safe

from playground.batches import services
from playground.batches.forms import BatchForm, ResubmitForm
from playground.batches.models import Batch
from playground.lib import downloads
from playground.upstream.errors import UpstreamError

LISTED = 50


def _render_page(request, template: str, form: BatchForm, **extra) -> HttpResponse:
    batches = Batch.objects.for_user(request.user).select_related("prompt_version__prompt")[:LISTED]
    context = {"form": form, "batches": batches, **extra}
    context["resubmit_form"] = ResubmitForm(user=request.user)  # a fork's "Submit again" and its connection
    return render(request, template, context)


@require_GET
def index(request):
    form = BatchForm(user=request.user)
    return _render_page(request, "batches/index.html", form)


@require_POST
async def create(request):
    user = await request.auser()
    form = await sync_to_async(BatchForm)(request.POST, request.FILES, user=user)
    error = created = None
    if await sync_to_async(form.is_valid)():
        filename, content = form.input_file()
        try:
            created = await services.submit(
                user=user,
                connection=form.cleaned_data["connection"],
                filename=filename,
                content=content,
                completion_window=form.cleaned_data["completion_window"],
                metadata=form.cleaned_data["metadata"],
                prompt_version=form.cleaned_data.get("prompt_version"),
            )
        except UpstreamError as exc:
            error = services.explain(exc)
        else:
            if not request.htmx:
                messages.success(request, f"Batch {created.remote_id} created with {created.request_count} requests.")
                return redirect("batches:index")
            keep = ("connection", "source", "model", "completion_window", "max_tokens", "system", "version")
            initial = {name: form.cleaned_data[name] for name in keep}
            form = await sync_to_async(BatchForm)(user=user, initial=initial)
    template = "batches/index.html#batches-page" if request.htmx else "batches/index.html"
    return await sync_to_async(_render_page)(request, template, form, error=error, created=created)


@require_GET
def metadata_row(request):
    return render(request, "batches/index.html#metadata-row", {"key": "", "value": ""})


async def _batch(request, pk) -> Batch:
    """The user's batch with its connection (the upstream calls need it), or 404."""
    owned = Batch.objects.for_user(await request.auser()).select_related("connection")
    return await aget_object_or_404(owned, pk=pk)


async def _row(request, pk, action) -> HttpResponse:
    """Apply `action` (a service that calls the provider) to the batch and answer with its row."""
    batch = await _batch(request, pk)
    try:
        await action(batch)
    except UpstreamError as exc:
        shown = services.explain(exc)
        if not request.htmx:
            messages.error(request, f"{exc.title}: {exc.message} {exc.next_step}")
            return redirect("batches:index")
    else:
        shown = None
        if not request.htmx:
            return redirect("batches:index")
    context = {
        "batch": batch,
        "row_error": shown,
        "resubmit_form": await sync_to_async(ResubmitForm)(user=await request.auser()),
    }
    return await sync_to_async(render)(request, "batches/index.html#batch-row", context)


@require_POST
async def resubmit(request, pk):
    """Send a forked batch's requests again, as a new batch on the connection chosen beside its button. A refusal
    (the gate's for a team connection, or the provider's) is shown in the row, its picker on the connection refused,
    so that another can be chosen there."""
    batch = await _batch(request, pk)
    if batch.copy is None or not (batch.copy.get("requests") or []):
        raise Http404("Only a forked batch with its requests is submitted again.")
    user = await request.auser()
    form = await sync_to_async(ResubmitForm)(request.POST, user=user)
    if await sync_to_async(form.is_valid)():
        try:
            created = await services.resubmit(batch, user, form.cleaned_data["connection"])
        except UpstreamError as exc:
            shown = services.explain(exc)
        else:
            messages.success(request, f"Batch {created.remote_id} created with {created.request_count} requests.")
            return redirect(f"{reverse('batches:index')}#batch-{created.pk}")  # its new row in view
    else:
        shown = {"title": "Not sent", "message": form.errors["connection"][0]}
    page = await sync_to_async(BatchForm)(user=user)
    extra = {"resubmitted": batch.pk, "resubmit_chosen": form.chosen, "resubmit_error": shown}
    return await sync_to_async(_render_page)(request, "batches/index.html", page, **extra)


@require_GET
async def refresh(request, pk):
    return await _row(request, pk, services.refresh)


@require_POST
async def cancel(request, pk):
    return await _row(request, pk, services.cancel)


@require_GET
async def results(request, pk):
    batch = await _batch(request, pk)
    rows, error = [], None
    try:
        await services.refresh(batch)
        rows = await services.results(batch)
    except UpstreamError as exc:
        error = services.explain(exc)
    shown = rows[: services.RESULTS_SHOWN]
    answered = sum(1 for row in rows if row.answer is not None)
    failed = sum(1 for row in rows if row.error is not None)
    context = {"batch": batch, "rows": shown, "hidden": len(rows) - len(shown), "error": error}
    return await sync_to_async(render)(
        request, "batches/results.html", {**context, "answered": answered, "failed": failed}
    )


@require_safe
async def download(request, pk, kind):
    batch = await _batch(request, pk)
    file_id = {"output": batch.output_file_id, "errors": batch.error_file_id}.get(kind)
    if not file_id:
        raise Http404("This batch has no such file.")
    try:
        content = await services.file_content(batch, file_id)
    except UpstreamError as exc:
        messages.error(request, f"{exc.title}: {exc.message} {exc.next_step}")
        return redirect("batches:index")
    name = f"{batch.remote_id}_{kind}.jsonl"
    return downloads.serve_bytes(request, content, content_type="application/jsonl", filename=name)
