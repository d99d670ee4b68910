"""Rows from CSV and JSONL files, and back: the one parser of dataset imports (the import view and the bench call
it), with every error naming the row (or line) and the column, and the limits named in words.

A file's columns are its inputs, named like a template's {{variables}}, and `expected` (any case), the expected
output. Limits: MAX_IMPORT_BYTES per file (refused by size before it is read), MAX_ROWS rows, MAX_COLUMNS input
columns, MAX_VALUE characters per cell.
"""

import csv
import io
import json
from dataclasses import dataclass, field

from playground import inputs
from playground.datasets.models import EXPECTED
from playground.lib.templating import NAME_RE

MAX_IMPORT_BYTES = 20 * 1024 * 1024
MAX_ROWS = 50_000
MAX_COLUMNS = 50
MAX_VALUE = 20_000
ERRORS_SHOWN = 20
KINDS = ("csv", "jsonl")


@dataclass
class Parsed:
    columns: list[str] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)  # {"values": {column: text}, "expected": text}
    errors: list[str] = field(default_factory=list)


def megabytes(size: int) -> str:
    if size < 1024 * 1024:
        return f"{size:,} bytes"
    return f"{size / (1024 * 1024):,.1f} MB".replace(".0 MB", " MB")


def too_big(size: int) -> str | None:
    if size > MAX_IMPORT_BYTES:
        return f"file: {megabytes(size)}; the limit is {megabytes(MAX_IMPORT_BYTES)} per import. Nothing was imported."
    return None


def kind_of(filename: str) -> str:
    return "jsonl" if filename.lower().endswith((".jsonl", ".ndjson", ".json")) else "csv"


def parse(data: bytes | str, kind: str) -> Parsed:
    """Rows from a file's bytes (UTF-8, with or without a BOM); `kind` is "csv" or "jsonl"."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Parsed(errors=[f"file: not UTF-8 text (byte {exc.start + 1} is not valid UTF-8)."])
    text = data.lstrip("\ufeff")
    if not text.strip():
        return Parsed(errors=["file: the file is empty."])
    parsed = parse_jsonl(text) if kind == "jsonl" else parse_csv(text)
    if len(parsed.rows) > MAX_ROWS:
        parsed.errors.insert(0, f"file: {len(parsed.rows):,} rows; the limit is {MAX_ROWS:,} rows per version.")
    if not parsed.rows and not parsed.errors:
        parsed.errors.append("file: no rows (a CSV needs a header row and at least one row below it).")
    return parsed


def check_columns(names: list[str], where: str = "header") -> list[str]:
    """Errors of a list of input column names (without `expected`)."""
    errors, seen = [], set()
    for number, name in enumerate(names, start=1):
        if not NAME_RE.match(name):
            errors.append(f"{where}, column {number}: “{name[:80]}” is not a variable name (letters, digits and _).")
        elif name in seen:
            errors.append(f"{where}, column {number}: “{name}” appears twice.")
        seen.add(name)
    if len(names) > MAX_COLUMNS:
        errors.append(f"{where}: {len(names)} input columns; the limit is {MAX_COLUMNS}.")
    return errors


def check_value(where: str, column: str, value: str) -> str | None:
    if "\x00" in value:
        return f"{where}, column {column}: NUL characters (\\u0000) are not allowed."
    if len(value) > MAX_VALUE:
        return f"{where}, column {column}: {len(value):,} characters; the limit is {MAX_VALUE:,}."
    return None


def _row(parsed: Parsed, where: str, header: list[str], cells) -> None:
    item = {"values": {}, "expected": ""}
    for name, value in zip(header, cells, strict=True):
        if problem := check_value(where, name, value):
            parsed.errors.append(problem)
        if name.lower() == EXPECTED:
            item["expected"] = value
        else:
            item["values"][name] = value
    parsed.rows.append(item)


def parse_csv(text: str) -> Parsed:
    parsed = Parsed()
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [name.strip() for name in next(reader)]
    except (csv.Error, StopIteration) as exc:
        parsed.errors.append(f"header: not valid CSV ({exc}).")
        return parsed
    parsed.columns = [name for name in header if name.lower() != EXPECTED]
    parsed.errors += check_columns(parsed.columns)
    if sum(name.lower() == EXPECTED for name in header) > 1:
        parsed.errors.append("header: “expected” appears twice.")
    if parsed.errors:
        return parsed
    listed = ", ".join(header)
    number = 0
    try:
        for number, cells in enumerate(reader, start=1):
            if not any(cell.strip() for cell in cells):
                continue
            if len(cells) < len(header):
                missing = "”, “".join(header[len(cells) :])
                parsed.errors.append(
                    f"row {number}: no value for column “{missing}” ({len(cells)} value{'s' * (len(cells) != 1)} for "
                    f"{len(header)} columns: "
                    f"{listed})."
                )
            elif len(cells) > len(header):
                parsed.errors.append(
                    f"row {number}: {len(cells)} values for {len(header)} columns ({listed}); value {len(header) + 1} "
                    "has no column."
                )
            else:
                _row(parsed, f"row {number}", header, cells)
    except csv.Error as exc:
        parsed.errors.append(f"row {number + 1}: not valid CSV ({exc}).")
    return parsed


def parse_jsonl(text: str) -> Parsed:
    """One JSON object per line; every line has the first line's keys (a mismatch is named by line and key)."""
    parsed = Parsed()
    header: list[str] | None = None
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {line_number}"
        try:
            data = inputs.loads(line, where, max_depth=2)
        except inputs.InputError as exc:
            parsed.errors.append(f"{exc}.")
            continue
        except json.JSONDecodeError as exc:
            parsed.errors.append(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}).")
            continue
        if not isinstance(data, dict):
            parsed.errors.append(f'{where}: must be a JSON object ({{"column": "value", …}}).')
            continue
        cells = {}
        for name, value in data.items():
            if value is None:
                value = ""
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                parsed.errors.append(f"{where}, column {name}: must be text or a number.")
                continue
            cells[name] = str(value)
        if header is None:
            header = list(data)
            parsed.columns = [name for name in header if name.lower() != EXPECTED]
            problems = check_columns(parsed.columns, where)
            if problems:
                parsed.errors += problems
                return parsed
        listed = ", ".join(header)
        extra = [name for name in data if name not in header]
        missing = [name for name in header if name not in data]
        if extra:
            parsed.errors.append(f"{where}: column “{extra[0]}” is not in the first line's columns ({listed}).")
        if missing:
            parsed.errors.append(f"{where}: no value for column “{missing[0]}” (the first line has {listed}).")
        if extra or missing or len(cells) != len(header):
            continue
        _row(parsed, where, header, [cells[name] for name in header])
    return parsed


def shown_errors(errors: list[str]) -> list[str]:
    if len(errors) <= ERRORS_SHOWN:
        return errors
    return [*errors[:ERRORS_SHOWN], f"… and {len(errors) - ERRORS_SHOWN:,} more."]


def to_csv(columns: list[str], rows: list[dict]) -> str:
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow([*columns, EXPECTED])
    for row in rows:
        writer.writerow([*(row["values"].get(name, "") for name in columns), row.get("expected", "")])
    return out.getvalue()


def to_jsonl(columns: list[str], rows: list[dict]) -> str:
    lines = [
        json.dumps(
            {**{name: row["values"].get(name, "") for name in columns}, EXPECTED: row.get("expected", "")},
            ensure_ascii=False,
        )
        for row in rows
    ]
    return "\n".join(lines) + ("\n" if lines else "")
