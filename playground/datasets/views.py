"""The dataset pages: the list (mine and my teams'), a dataset's rows in an editable grid (save = a new version),
its version history, any version's rows, restore, import (a new dataset or a new version) and export (CSV, JSONL)."""

import re

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import OuterRef, Subquery
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST, require_safe

from playground import inputs
from playground.connections.models import Team
from playground.datasets import services, tabular
from playground.datasets.models import Dataset, DatasetVersion, get_dataset, get_version

ROWS_PER_PAGE = 50
LISTED = 200
BLANK_ROWS = 1  # new-row lines at the end of the grid's last page ("Add row" adds more)
# Multipart framing around the file: a request longer than the limit by more than this is refused unread.
FRAMING = 64 * 1024


def _editable(request, pk) -> tuple[Dataset, str]:
    dataset = get_dataset(request, pk)
    return dataset, dataset.role_of(request.user)


def _team_of(request, value) -> Team | None:
    if not value:
        return None
    return get_object_or_404(Team.objects.for_user(request.user), pk=inputs.object_id(value))


@require_GET
def index(request):
    return _index(request)


def _index(request, errors=None):
    """The list and its forms (with the errors of a create or an import that saved nothing)."""
    newest = DatasetVersion.objects.filter(dataset=OuterRef("pk")).order_by("-number").values("pk")[:1]
    datasets = list(
        Dataset.objects.for_user(request.user).select_related("team").annotate(latest_pk=Subquery(newest))[:LISTED]
    )
    latest = DatasetVersion.objects.listed().in_bulk([d.latest_pk for d in datasets if d.latest_pk])
    for dataset in datasets:
        dataset.shown_latest = latest.get(dataset.latest_pk)
    context = {
        "datasets": datasets,
        "teams": Team.objects.for_user(request.user),
        "errors": errors or [],
        "posted": request.POST if request.method == "POST" else {},
        "max_bytes": tabular.megabytes(tabular.MAX_IMPORT_BYTES),
        "max_import_bytes": tabular.MAX_IMPORT_BYTES,
        "max_rows": tabular.MAX_ROWS,
    }
    return render(request, "datasets/index.html", context)


@require_POST
def create(request):
    team = _team_of(request, request.POST.get("owner"))
    try:
        dataset, _ = services.create(user=request.user, team=team, name=request.POST.get("name", ""))
    except services.DatasetError as exc:
        return _index(request, errors=exc.errors)
    messages.success(request, f"Created {dataset.name}: add rows in the grid, or import a file as a new version.")
    return redirect("datasets:detail", dataset.pk)


def _grid_context(request, dataset, version, *, posted=None, errors=None, errors_title="Nothing was saved.") -> dict:
    role = dataset.role_of(request.user)
    latest = dataset.versions.listed().order_by("-number").first()
    pages = Paginator(range(version.row_count), ROWS_PER_PAGE)
    page = pages.get_page(request.GET.get("page") or (posted or {}).get("page"))
    rows = []
    for index in page.object_list:
        row = version.rows[index]
        rows.append((index, [(c, row["values"].get(c, "")) for c in version.columns], row.get("expected", "")))
    editing = bool(role) and version.number == latest.number
    return {
        "dataset": dataset,
        "version": version,
        "latest": latest,
        "role": role,
        "editing": editing,
        "rows": rows,
        "page": page,
        "blank": range(BLANK_ROWS) if editing and not page.has_next() else [],
        "posted": posted,
        "errors": errors or [],
        "errors_title": errors_title,
        "max_bytes": tabular.megabytes(tabular.MAX_IMPORT_BYTES),
        "max_import_bytes": tabular.MAX_IMPORT_BYTES,
        "max_rows": tabular.MAX_ROWS,
    }


@require_GET
def detail(request, pk: int):
    dataset = get_dataset(request, pk)
    latest = dataset.latest()
    if latest is None:
        raise Http404(f"{dataset.name} has no versions.")
    wanted = request.GET.get("v")
    try:
        version = get_version(dataset, wanted) if wanted else latest
    except Http404 as exc:
        # A link to a version that no longer exists: the latest, saying so.
        context = _grid_context(
            request,
            dataset,
            latest,
            errors=[f"{exc} Showing the latest, v{latest.number}."],
            errors_title="No such version.",
        )
        return render(request, "datasets/detail.html", context, status=404)
    return render(request, "datasets/detail.html", _grid_context(request, dataset, version))


@require_GET
def blank_row(request, pk: int):
    """One more new-row line for the grid (its "Add row" button appends it)."""
    dataset = get_dataset(request, pk)
    version = dataset.latest()
    try:
        key = max(0, min(int(request.GET.get("n", "1")), 10_000))
    except ValueError:
        key = 1
    return render(request, "datasets/detail.html#blank-row", {"version": version, "key": key, "editing": True})


@require_POST
def save(request, pk: int):
    dataset, role = _editable(request, pk)
    if not role:
        raise Http404("No such dataset.")
    base = get_version(dataset, request.POST.get("base"))
    latest = dataset.latest()
    context = None
    if base.number != latest.number:
        errors = [
            f"v{base.number} is not the latest version any more: v{latest.number} was saved since. Nothing was saved; "
            "open the latest version and make your change again."
        ]
    else:
        errors = services.check_message(request.POST.get("message", ""))
        columns, rows, problems = services.apply_edit(base, request.POST)
        errors += problems
        if not errors and columns == base.columns and rows == base.rows:
            messages.info(request, "Nothing changed: no version was saved.")
            return redirect("datasets:detail", dataset.pk)
    if errors:
        context = _grid_context(request, dataset, base, posted=request.POST, errors=tabular.shown_errors(errors))
        return render(request, "datasets/detail.html", context)
    version = services.save_version(
        dataset, columns=columns, rows=rows, author=request.user, message=request.POST.get("message", "")
    )
    messages.success(request, f"Saved {version.ref} ({version.row_count:,} rows).")
    return redirect("datasets:detail", dataset.pk)


@require_GET
def versions(request, pk: int):
    dataset = get_dataset(request, pk)
    shown = dataset.versions.listed().select_related("author")[:LISTED]
    context = {"dataset": dataset, "versions": shown, "role": dataset.role_of(request.user)}
    return render(request, "datasets/versions.html", context)


@require_POST
def restore(request, pk: int, number: int):
    dataset, role = _editable(request, pk)
    if not role:
        raise Http404("No such dataset.")
    old = get_version(dataset, number)
    version = services.restore(dataset, old, request.user)
    messages.success(request, f"v{old.number} restored as {version.ref}.")
    return redirect("datasets:detail", dataset.pk)


@require_POST
def delete(request, pk: int):
    dataset, role = _editable(request, pk)
    if role != "admin":
        messages.error(request, "Only the team's owner or admins delete a team's dataset.")
        return redirect("datasets:detail", dataset.pk)
    name = dataset.name
    dataset.delete()
    messages.success(request, f"Deleted {name} and all its versions.")
    return redirect("datasets:index")


@require_safe
def export(request, pk: int, number: int, kind: str):
    dataset = get_dataset(request, pk)
    try:
        version = get_version(dataset, number)
    except Http404 as exc:
        return HttpResponse(f"{exc} Nothing to export.", status=404, content_type="text/plain; charset=utf-8")
    if kind == "csv":
        body, content_type = tabular.to_csv(version.columns, version.rows), "text/csv; charset=utf-8"
    elif kind == "jsonl":
        body, content_type = tabular.to_jsonl(version.columns, version.rows), "application/jsonl; charset=utf-8"
    else:
        raise Http404("No such export: CSV or JSONL.")
    response = HttpResponse(body, content_type=content_type)
    safe = re.sub(r"[^A-Za-z0-9_-]+", "-", dataset.name).strip("-")[:60] or "dataset"
    response["Content-Disposition"] = f'attachment; filename="{safe}-v{version.number}.{kind}"'
    return response


def read_upload(request) -> tuple[tabular.Parsed, str]:
    """The posted file parsed, or its errors: a request over the limit is refused by its length before its body is
    read; the file's own size is checked again before its bytes are."""
    length = int(request.META.get("CONTENT_LENGTH") or 0)
    if length > tabular.MAX_IMPORT_BYTES + FRAMING:
        return tabular.Parsed(errors=[tabular.too_big(length)]), ""
    upload = request.FILES.get("file")
    if upload is None:
        return tabular.Parsed(errors=["file: choose a CSV or JSONL file."]), ""
    if problem := tabular.too_big(upload.size):
        return tabular.Parsed(errors=[problem]), upload.name
    kind = request.POST.get("kind") or tabular.kind_of(upload.name)
    return tabular.parse(upload.read(), kind if kind in tabular.KINDS else "csv"), upload.name


def _file_stem(filename: str) -> str:
    return re.sub(r"\.(csv|tsv|jsonl|ndjson|json)$", "", filename, flags=re.IGNORECASE).strip() or "Imported"


@require_POST
def import_new(request):
    """A file as a new dataset (its v1)."""
    parsed, filename = read_upload(request)
    if parsed.errors:
        return _index(request, errors=tabular.shown_errors(parsed.errors))
    team = _team_of(request, request.POST.get("owner"))
    name = (request.POST.get("name") or "").strip() or _file_stem(filename)
    try:
        dataset, version = services.create(
            user=request.user,
            team=team,
            name=name,
            columns=parsed.columns,
            rows=parsed.rows,
            message=f"Imported {filename}"[:200],
        )
    except services.DatasetError as exc:
        return _index(request, errors=exc.errors)
    messages.success(request, f"Imported {version.row_count:,} rows into {version.ref}.")
    return redirect("datasets:detail", dataset.pk)


@require_POST
def import_version(request, pk: int):
    """A file as the dataset's new version (replacing its rows)."""
    dataset, role = _editable(request, pk)
    if not role:
        raise Http404("No such dataset.")
    parsed, filename = read_upload(request)
    errors = parsed.errors + services.check_message(request.POST.get("message", ""))
    if errors:
        context = _grid_context(request, dataset, dataset.latest(), errors=tabular.shown_errors(errors))
        return render(request, "datasets/detail.html", context)
    message = request.POST.get("message") or f"Imported {filename}"
    version = services.import_version(dataset, parsed, author=request.user, message=message[:200])
    messages.success(request, f"Imported {version.row_count:,} rows as {version.ref}.")
    return redirect("datasets:detail", dataset.pk)
