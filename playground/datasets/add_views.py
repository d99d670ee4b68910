"""“Add to a dataset” from a chat turn, a shared conversation's turn or an evaluation row (sources.py): a small menu
of the user's datasets (and “New dataset”), then one click adds the row as the dataset's new version."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from playground.datasets import services, sources
from playground.datasets.models import Dataset

MENU_LENGTH = 30


def _row(request) -> tuple[sources.Source, str, sources.Row]:
    data = request.POST if request.method == "POST" else request.GET
    source = sources.get(data.get("source", ""))
    ref = data.get("ref", "")
    if not ref or len(ref) > 200:
        raise Http404("No such row.")
    return source, ref, source.read(request, ref)


@require_http_methods(["GET", "POST"])
def add(request):
    source, ref, row = _row(request)
    datasets = [d for d in Dataset.objects.for_user(request.user).select_related("team") if d.role_of(request.user)]
    context = {"source": source.name, "ref": ref, "row": row, "datasets": datasets[:MENU_LENGTH], "errors": []}
    if request.method == "POST":
        try:
            if request.POST.get("dataset") == "new":
                name = services.free_name(request.user, None, row.name)
                dataset, _ = services.create(user=request.user, team=None, name=name, columns=list(row.values))
            else:
                choices = {str(d.pk): d for d in datasets}
                dataset = choices.get(request.POST.get("dataset", ""))
                if dataset is None:
                    raise services.DatasetError(
                        ["dataset: that dataset no longer exists (or is not yours); choose another."]
                    )
            version = services.add_row(
                dataset, values=row.values, expected=row.expected, author=request.user, origin=source.label
            )
        except services.DatasetError as exc:
            context["errors"] = exc.errors
        else:
            if not request.htmx:
                messages.success(request, f"Added a row to {version.ref}.")
                return redirect("datasets:detail", dataset.pk)
            context |= {"added": version, "url": reverse("datasets:detail", args=[dataset.pk])}
    template = "datasets/add.html#add-menu" if request.htmx else "datasets/add.html"
    return render(request, template, context)
