"""An evaluation's test cases as people change them: imported (replacing or appended), typed into the table, a row
added or deleted. Each change that makes them differ from the dataset version they came from forgets that version."""

from django.db import transaction

from playground.evaluate.cases import MAX_VALUE, Parsed
from playground.evaluate.models import MAX_CASES, Evaluation, TestCase
from playground.evaluate.services import EvaluationError, regrade, sync_columns


@transaction.atomic
def import_cases(evaluation: Evaluation, parsed: Parsed, *, append: bool) -> int:
    """Store parsed rows (the caller checked `parsed.errors` is empty); returns how many rows were added."""
    start, rows = 0, list(enumerate(parsed.rows))
    if append:
        count = evaluation.cases.count()
        if count + len(parsed.rows) > MAX_CASES:
            raise EvaluationError(
                f"test cases: at most {MAX_CASES} rows are allowed ({count} + {len(parsed.rows)} imported)."
            )
        last = evaluation.cases.order_by("-position").first()
        start = last.position + 1 if last else 0
    else:
        rows = _keep_same_rows(evaluation, rows)
    TestCase.objects.bulk_create(
        [
            TestCase(evaluation=evaluation, position=start + i, values=row["values"], expected=row["expected"])
            for i, row in rows
        ]
    )
    sync_columns(evaluation, parsed.columns)
    evaluation.dataset_version = None  # "Use dataset…" sets it again after
    evaluation.save(update_fields=["columns", "dataset_version", "updated"])
    return len(parsed.rows)


def _keep_same_rows(evaluation: Evaluation, rows: list) -> list:
    """Replacing the cases: a case whose values and expected output come again is kept (moved to its new place),
    so the earlier runs keep their answers to it and compare with later ones on it; the other cases leave the table
    (remove: the runs that answered them keep those answers). Returns the rows that are new."""
    existing: dict[tuple, list[TestCase]] = {}
    for case in evaluation.cases.all():
        existing.setdefault(_content(case.values, case.expected), []).append(case)
    kept, new = [], []
    for position, row in rows:
        same = existing.get(_content(row["values"], row["expected"]))
        if same:
            case = same.pop(0)
            case.position, case.values = position, row["values"]
            kept.append(case)
        else:
            new.append((position, row))
    remove(evaluation.cases.exclude(pk__in=[c.pk for c in kept]))
    TestCase.objects.bulk_update(kept, ["position", "values"], batch_size=500)
    return new


def remove(cases) -> None:
    """Take cases out of the table. One that a run answered is retired, not deleted: the run keeps its answers,
    grades and ratings, and compares and exports them as they were; the others are deleted."""
    cases.filter(cells__isnull=True).delete()
    cases.update(retired=True)  # what is left, every one of them answered


def _content(values: dict, expected: str) -> tuple:
    return (tuple(sorted((k, str(v)) for k, v in values.items() if v not in ("", None))), expected)


@transaction.atomic
def save_typed_cases(evaluation: Evaluation, data) -> list[str]:
    """The table as typed: fields `case-<pk>-<column>` and `case-<pk>-expected`. Returns errors (nothing saved)."""
    cases = list(evaluation.cases.all())
    before = [(dict(case.values), case.expected) for case in cases]
    errors = []
    for case in cases:
        number = case.position + 1
        for column in [*evaluation.columns, "expected"]:
            value = data.get(f"case-{case.pk}-{column}")
            if value is not None and len(value) > MAX_VALUE:
                errors.append(f"row {number}, column {column}: at most {MAX_VALUE} characters (got {len(value)}).")
    if errors:
        return errors
    for case in cases:
        for column in evaluation.columns:
            value = data.get(f"case-{case.pk}-{column}")
            if value is not None:
                case.values[column] = value
        expected = data.get(f"case-{case.pk}-expected")
        if expected is not None:
            case.expected = expected
    TestCase.objects.bulk_update(cases, ["values", "expected"])
    sync_columns(evaluation)
    if before != [(case.values, case.expected) for case in cases]:
        evaluation.dataset_version = None  # the cases are no longer that version's rows
    evaluation.save(update_fields=["columns", "dataset_version", "updated"])
    regrade(evaluation)
    return []


def add_case(evaluation: Evaluation) -> TestCase:
    if evaluation.cases.count() >= MAX_CASES:
        raise EvaluationError(f"test cases: at most {MAX_CASES} rows are allowed.")
    last = evaluation.cases.order_by("-position").first()
    case = TestCase.objects.create(
        evaluation=evaluation, position=last.position + 1 if last else 0, values=dict.fromkeys(evaluation.columns, "")
    )
    cases_edited(evaluation)
    return case


def cases_edited(evaluation: Evaluation) -> None:
    """A row added or deleted: the cases are no longer the dataset version they were taken from."""
    if evaluation.dataset_version_id is not None:
        evaluation.dataset_version = None
        evaluation.save(update_fields=["dataset_version", "updated"])
