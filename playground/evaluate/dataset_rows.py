"""A row for a dataset (datasets/sources.py) from an evaluation's test case: its values and its expected output."""

from django.http import Http404

from playground.datasets.sources import Row, source
from playground.evaluate.models import Evaluation, TestCase


@source("evaluation-row", "an evaluation row")
def evaluation_row(request, ref: str) -> Row:
    if not ref.isdigit():
        raise Http404("No such row.")
    case = TestCase.objects.filter(evaluation__in=Evaluation.objects.for_user(request.user), pk=int(ref))
    case = case.select_related("evaluation").first()
    if case is None:
        raise Http404("No such row.")
    values = {name: str(case.values.get(name, "")) for name in case.evaluation.columns}
    return Row(values=values, expected=case.expected, name=case.evaluation.title)
