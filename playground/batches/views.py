import re

from asgiref.sync import async_to_sync
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST, require_safe

from playground.batches import services
from playground.batches.forms import BatchForm
from playground.batches.models import Batch, get_batch
from playground.upstream.errors import UpstreamError

LISTED = 50


def _page(request, form: BatchForm, **extra) -> dict:
    return {"form": form, "batches": Batch.objects.for_user(request.user)[:LISTED], **extra}


@require_GET
def index(request):
    form = BatchForm(user=request.user)
    return render(request, "batches/index.html", _page(request, form))


@require_POST
def create(request):
    form = BatchForm(request.POST, request.FILES, user=request.user)
    error = created = None
    if form.is_valid():
        filename, content = form.input_file()
        try:
            created = async_to_sync(services.submit)(
                user=request.user,
                connection=form.cleaned_data["connection"],
                filename=filename,
                content=content,
                completion_window=form.cleaned_data["completion_window"],
                metadata=form.cleaned_data["metadata"],
            )
        except UpstreamError as exc:
            error = services.explain(exc)
        else:
            if not request.htmx:
                messages.success(request, f"Batch {created.remote_id} created with {created.request_count} requests.")
                return redirect("batches:index")
            keep = ("connection", "source", "model", "completion_window", "max_tokens", "system")
            form = BatchForm(user=request.user, initial={name: form.cleaned_data[name] for name in keep})
    template = "batches/index.html#batches-page" if request.htmx else "batches/index.html"
    return render(request, template, _page(request, form, error=error, created=created))


@require_GET
def models(request):
    form = BatchForm(user=request.user, initial={"connection": request.GET.get("connection")})
    return render(request, "batches/index.html#model-field", {"form": form})


@require_GET
def metadata_row(request):
    return render(request, "batches/index.html#metadata-row", {"key": "", "value": ""})


def _row(request, batch: Batch, row_error: UpstreamError | None = None):
    if not request.htmx:
        if row_error:
            messages.error(request, f"{row_error.title}: {row_error.message} {row_error.next_step}")
        return redirect("batches:index")
    shown = services.explain(row_error) if row_error else None
    return render(request, "batches/index.html#batch-row", {"batch": batch, "row_error": shown})


@require_GET
def refresh(request, pk):
    batch = get_batch(request, pk)
    try:
        async_to_sync(services.refresh)(batch)
    except UpstreamError as exc:
        return _row(request, batch, exc)
    return _row(request, batch)


@require_POST
def cancel(request, pk):
    batch = get_batch(request, pk)
    try:
        async_to_sync(services.cancel)(batch)
    except UpstreamError as exc:
        return _row(request, batch, exc)
    return _row(request, batch)


@require_GET
def results(request, pk):
    batch = get_batch(request, pk)
    rows, error = [], None
    try:
        async_to_sync(services.refresh)(batch)
        rows = async_to_sync(services.results)(batch)
    except UpstreamError as exc:
        error = services.explain(exc)
    shown = rows[: services.RESULTS_SHOWN]
    answered = sum(1 for row in rows if row.answer is not None)
    failed = sum(1 for row in rows if row.error is not None)
    context = {"batch": batch, "rows": shown, "hidden": len(rows) - len(shown), "error": error}
    return render(request, "batches/results.html", {**context, "answered": answered, "failed": failed})


@require_safe
def download(request, pk, kind):
    batch = get_batch(request, pk)
    file_id = {"output": batch.output_file_id, "errors": batch.error_file_id}.get(kind)
    if not file_id:
        raise Http404("This batch has no such file.")
    try:
        content = async_to_sync(services.file_content)(batch, file_id)
    except UpstreamError as exc:
        messages.error(request, f"{exc.title}: {exc.message} {exc.next_step}")
        return redirect("batches:index")
    response = HttpResponse(content, content_type="application/jsonl")
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", batch.remote_id)
    response["Content-Disposition"] = f'attachment; filename="{name}_{kind}.jsonl"'
    return response
