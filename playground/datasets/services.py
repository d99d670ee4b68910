"""What changes a dataset: create one, save a new version (an edit of the grid, an import, a restore, a row added
from elsewhere). Each is a new immutable version; a change with any error saves nothing."""

from django.db import IntegrityError, transaction

from playground.datasets import tabular
from playground.datasets.models import MESSAGE_LENGTH, NAME_LENGTH, Dataset, DatasetVersion

DEFAULT_COLUMNS = ["input"]


class DatasetError(ValueError):
    """A change the dataset cannot take; `errors` name the field (row, column) and the limit."""

    def __init__(self, errors: list[str]):
        super().__init__(" ".join(errors))
        self.errors = errors


def check_name(user, team, name: str, *, dataset: Dataset | None = None) -> list[str]:
    name = (name or "").strip()
    if not name:
        return ["name: give the dataset a name."]
    if len(name) > NAME_LENGTH:
        return [f"name: at most {NAME_LENGTH} characters (it has {len(name):,})."]
    if "\x00" in name or not name.isprintable():
        return ["name: letters, digits, spaces and punctuation."]
    taken = Dataset.objects.owned_by(user, team).filter(name=name)
    if dataset is not None:
        taken = taken.exclude(pk=dataset.pk)
    if taken.exists():
        where = f"the datasets of {team.name}" if team else "your datasets"
        return [f"name: “{name}” is already a dataset in {where}; choose another name."]
    return []


def free_name(user, team, base: str) -> str:
    """`base` as a name free among the owner's datasets: "Base", "Base (2)", …"""
    base = (base or "Dataset").strip()[: NAME_LENGTH - 6] or "Dataset"
    taken = set(Dataset.objects.owned_by(user, team).values_list("name", flat=True))
    name, number = base, 1
    while name in taken:
        number += 1
        name = f"{base} ({number})"
    return name


def check_message(message: str) -> list[str]:
    if len(message or "") > MESSAGE_LENGTH or "\x00" in (message or ""):
        return [f"message: at most {MESSAGE_LENGTH} characters, without NUL."]
    return []


def check_rows(columns: list[str], rows: list[dict]) -> list[str]:
    errors = tabular.check_columns(columns, "columns")
    if len(rows) > tabular.MAX_ROWS:
        errors.append(f"rows: {len(rows):,} rows; the limit is {tabular.MAX_ROWS:,} rows per version.")
    for number, row in enumerate(rows, start=1):
        for column in [*columns, "expected"]:
            value = row["expected"] if column == "expected" else row["values"].get(column, "")
            if problem := tabular.check_value(f"row {number}", column, value):
                errors.append(problem)
    return errors


def save_version(
    dataset: Dataset,
    *,
    columns: list[str],
    rows: list[dict],
    author,
    message: str = "",
    restored_from: int | None = None,
) -> DatasetVersion:
    """The dataset's next version (v1, v2, …): always a new row, never a change to an existing one."""
    for _ in range(3):
        try:
            with transaction.atomic():
                latest = dataset.versions.select_for_update().listed().order_by("-number").first()
                version = DatasetVersion(
                    dataset=dataset,
                    number=(latest.number if latest else 0) + 1,
                    author=author,
                    message=(message or "").strip()[:MESSAGE_LENGTH],
                    columns=list(columns),
                    rows=rows,
                    restored_from=restored_from,
                )
                version.save()
                dataset.save(update_fields=["updated"])
                return version
        except IntegrityError:  # two saves took the same number: the later one takes the next
            continue
    raise IntegrityError("dataset version: could not take a number; try again.")


@transaction.atomic
def create(*, user, team, name: str, columns=None, rows=(), message: str = "Created") -> tuple[Dataset, DatasetVersion]:
    """A new dataset and its v1 (checked: DatasetError names what is wrong, and nothing is saved)."""
    columns = list(DEFAULT_COLUMNS if columns is None else columns)
    rows = list(rows)
    errors = check_name(user, team, name) + check_rows(columns, rows)
    if errors:
        raise DatasetError(errors)
    dataset = Dataset.objects.create(owner=user, team=team, name=name.strip())
    return dataset, save_version(dataset, columns=columns, rows=rows, author=user, message=message)


def restore(dataset: Dataset, old: DatasetVersion, author) -> DatasetVersion:
    return save_version(
        dataset,
        columns=old.columns,
        rows=old.rows,
        author=author,
        message=f"Restored v{old.number}",
        restored_from=old.number,
    )


def add_row(dataset: Dataset, *, values: dict, expected: str, author, origin: str) -> DatasetVersion:
    """The latest version plus one row. A row of one `input` goes to the dataset's first column when it has no
    `input` column; any other column the row brings is added (empty in the other rows)."""
    latest = dataset.latest()
    columns = list(latest.columns) if latest else list(DEFAULT_COLUMNS)
    rows = list(latest.rows) if latest else []
    if list(values) == ["input"] and columns and "input" not in columns:
        values = {columns[0]: values["input"]}
    columns += [name for name in values if name not in columns]
    rows.append({"values": {name: str(values.get(name, "")) for name in columns}, "expected": str(expected)})
    errors = check_rows(columns, rows[-1:]) if len(rows) <= tabular.MAX_ROWS else []
    if len(rows) > tabular.MAX_ROWS:
        errors.append(f"rows: {dataset.name} has {tabular.MAX_ROWS:,} rows, the limit per version.")
    if errors:
        raise DatasetError([e.replace("row 1,", f"row {len(rows)},") for e in errors])
    return save_version(dataset, columns=columns, rows=rows, author=author, message=f"Added a row from {origin}")


def import_version(dataset: Dataset, parsed: tabular.Parsed, *, author, message: str = "") -> DatasetVersion:
    """A parsed file (the caller checked `parsed.errors` is empty) as the dataset's new version, whole."""
    return save_version(dataset, columns=parsed.columns, rows=parsed.rows, author=author, message=message or "Imported")


def apply_edit(base: DatasetVersion, data) -> tuple[list[str], list[dict], list[str]]:
    """(columns, rows, errors) of the grid as posted over `base`: cells `c-<row>-<column>` and `e-<row>` (the
    expected output) of the rows shown, `d-<row>` to delete one, new rows `n-<k>-<column>` / `n-<k>-expected`,
    and `new_column`. Rows are numbered from 0 in `base`; rows not posted stay as they are."""
    columns = list(base.columns)
    errors = []
    added = (data.get("new_column") or "").strip()
    if added:
        if added in columns or added.lower() == "expected":
            errors.append(f"new column: “{added}” is already a column.")
        else:
            problems = tabular.check_columns([added], "new column")
            errors += [p.replace("new column, column 1", "new column") for p in problems]
            columns.append(added)
    rows = [{"values": dict(row["values"]), "expected": row.get("expected", "")} for row in base.rows]
    deleted = set()
    for key, value in data.items():
        parts = key.split("-", 2)
        if parts[0] not in ("c", "e", "d") or not parts[1:2] or not parts[1].isdigit():
            continue
        index = int(parts[1])
        if index >= len(rows):
            errors.append(f"row {index + 1}: {base.ref} has {len(rows)} rows; reload the page.")
            continue
        if parts[0] == "d":
            deleted.add(index)
        elif parts[0] == "e":
            rows[index]["expected"] = value
        elif len(parts) == 3 and parts[2] in columns:
            rows[index]["values"][parts[2]] = value
    new_keys = sorted({int(k.split("-")[1]) for k in data if k.startswith("n-") and k.split("-")[1].isdigit()})
    for k in new_keys:
        row = {"values": {c: data.get(f"n-{k}-{c}", "") for c in columns}, "expected": data.get(f"n-{k}-expected", "")}
        if any(v.strip() for v in row["values"].values()) or row["expected"].strip():
            rows.append(row)
    rows = [row for index, row in enumerate(rows) if index not in deleted]
    for row in rows:
        for column in columns:
            row["values"].setdefault(column, "")
    errors += check_rows(columns, rows)
    return columns, rows, errors
