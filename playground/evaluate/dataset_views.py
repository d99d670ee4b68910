"""An evaluation's test cases taken from a dataset version ("Use dataset…" on the evaluation's page): the cases
become the version's rows, and the evaluation records the version (Evaluation.dataset_version)."""

from django.contrib import messages
from django.db import transaction
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from playground import inputs
from playground.datasets.models import DatasetVersion
from playground.evaluate import services, testcases
from playground.evaluate.cases import Parsed
from playground.evaluate.models import MAX_CASES, Evaluation, get_editable


def use_version(evaluation: Evaluation, version: DatasetVersion) -> int:
    """Replace the evaluation's test cases by the version's rows; returns how many. EvaluationError when the version
    has more rows than an evaluation takes (nothing is changed)."""
    if version.row_count > MAX_CASES:
        raise services.EvaluationError(
            f"dataset: {version.ref} has {version.row_count:,} rows; an evaluation takes at most {MAX_CASES:,} "
            "test cases. Nothing was changed."
        )
    rows = [{"values": dict(row["values"]), "expected": row.get("expected", "")} for row in version.rows]
    with transaction.atomic():
        count = testcases.import_cases(evaluation, Parsed(columns=list(version.columns), rows=rows), append=False)
        evaluation.dataset_version = version
        evaluation.save(update_fields=["dataset_version", "updated"])
    return count


@require_POST
def use_dataset(request, pk):
    evaluation = get_editable(request, pk)
    back = reverse("evaluate:detail", args=[evaluation.pk]) + "?view=editor#cases"
    try:
        version_id = inputs.object_id(request.POST.get("version"))
    except Http404:
        version_id = None
    version = DatasetVersion.objects.for_user(request.user).select_related("dataset").filter(pk=version_id).first()
    if version is None:
        messages.error(
            request,
            "dataset: that dataset version no longer exists (or is not yours); choose another. Nothing changed.",
        )
        return redirect(back)
    try:
        count = use_version(evaluation, version)
    except services.EvaluationError as exc:
        messages.error(request, str(exc))
        return redirect(back)
    messages.success(request, f"Test cases replaced by the {count:,} rows of {version.ref}.")
    return redirect(back)
