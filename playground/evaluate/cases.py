"""Test cases from CSV (or tab-separated, pasted from a spreadsheet) and JSONL, with errors by row and column."""

import csv
import io
from dataclasses import dataclass, field

from playground import inputs
from playground.evaluate.models import MAX_CASES
from playground.evaluate.templating import NAME_RE

EXPECTED = "expected"
MAX_VALUE = 20_000
MAX_IMPORT_BYTES = 5 * 1024 * 1024
ERRORS_SHOWN = 20


@dataclass
class Parsed:
    columns: list[str] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)  # {"values": {...}, "expected": str}
    errors: list[str] = field(default_factory=list)


def parse(text: str, kind: str = "auto") -> Parsed:
    """Rows from CSV/TSV or JSONL text; `kind` is "csv", "jsonl" or "auto" (JSONL when it starts with `{`)."""
    text = text.lstrip("\ufeff")
    if kind == "auto":
        kind = "jsonl" if text.lstrip().startswith("{") else "csv"
    parsed = parse_jsonl(text) if kind == "jsonl" else parse_csv(text)
    if len(parsed.rows) > MAX_CASES:
        parsed.errors.insert(0, f"test cases: at most {MAX_CASES} rows are allowed (got {len(parsed.rows)}).")
    if not parsed.rows and not parsed.errors:
        parsed.errors.append("test cases: no rows found (a CSV needs a header row and at least one row).")
    return parsed


def _check_value(parsed: Parsed, row: int, column: str, value: str) -> None:
    if "\x00" in value or "\x00" in column:
        parsed.errors.append(
            f"row {row}, column {column.replace(chr(0), '')}: NUL characters (\\u0000) are not allowed."
        )
    if len(value) > MAX_VALUE:
        parsed.errors.append(f"row {row}, column {column}: at most {MAX_VALUE} characters (got {len(value)}).")


def _check_header(parsed: Parsed, names: list[str]) -> None:
    seen = set()
    for number, name in enumerate(names, start=1):
        if name.lower() == EXPECTED:
            continue
        if not NAME_RE.match(name):
            parsed.errors.append(
                f"header, column {number}: {name!r} is not a variable name (letters, digits and _, at most 64)."
            )
        if name in seen:
            parsed.errors.append(f"header, column {number}: {name!r} appears twice.")
        seen.add(name)


def parse_csv(text: str) -> Parsed:
    parsed = Parsed()
    first = text.split("\n", 1)[0]
    delimiter = "\t" if "\t" in first and "," not in first else ","
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        header = next(reader, None)
    except csv.Error as exc:
        parsed.errors.append(f"header: not valid CSV ({exc}).")
        return parsed
    if not header:
        return parsed
    header = [name.strip() for name in header]
    _check_header(parsed, header)
    parsed.columns = [name for name in header if name.lower() != EXPECTED]
    try:
        for line in reader:
            row = reader.line_num - 1  # data rows are numbered from 1, after the header
            if not any(cell.strip() for cell in line):
                continue
            if len(line) != len(header):
                parsed.errors.append(f"row {row}: {len(line)} values for {len(header)} columns ({', '.join(header)}).")
                continue
            item = {"values": {}, "expected": ""}
            for name, value in zip(header, line, strict=True):
                _check_value(parsed, row, name, value)
                if name.lower() == EXPECTED:
                    item["expected"] = value
                else:
                    item["values"][name] = value
            parsed.rows.append(item)
    except csv.Error as exc:
        parsed.errors.append(f"row {reader.line_num - 1}: not valid CSV ({exc}).")
    return parsed


def parse_jsonl(text: str) -> Parsed:
    parsed = Parsed()
    columns: dict[str, None] = {}
    for row, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = inputs.loads(line, max_depth=2)
        except inputs.InputError as exc:
            parsed.errors.append(f"row {row}: {exc}.")
            continue
        except ValueError as exc:
            parsed.errors.append(f"row {row}: not valid JSON ({exc}).")
            continue
        if not isinstance(data, dict):
            parsed.errors.append(f"row {row}: must be a JSON object of variable values.")
            continue
        item = {"values": {}, "expected": ""}
        for name, value in data.items():
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                parsed.errors.append(f"row {row}, column {name}: must be text or a number.")
                continue
            value = str(value)
            _check_value(parsed, row, name, value)
            if name.lower() == EXPECTED:
                item["expected"] = value
            elif not NAME_RE.match(name):
                parsed.errors.append(f"row {row}, column {name!r}: not a variable name (letters, digits and _).")
            else:
                item["values"][name] = value
                columns.setdefault(name)
        parsed.rows.append(item)
    parsed.columns = list(columns)
    return parsed


def shown_errors(errors: list[str]) -> list[str]:
    if len(errors) <= ERRORS_SHOWN:
        return errors
    return [*errors[:ERRORS_SHOWN], f"… and {len(errors) - ERRORS_SHOWN} more."]
