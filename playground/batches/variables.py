"""A batch from a prompt version: one request per row of variables (a CSV with a header row, or JSON lines of
objects), each compiled by prompts' own compiler (every variable filled, none unknown). Errors name the row."""

import csv
import io
import json

from playground.prompts.compiling import CompileError, compile_request

MAX_ROWS = 1000
MAX_ERRORS = 20


def parse_rows(text: str) -> tuple[list[dict], list[str]]:
    """The rows of `text`: JSON lines when its first line starts with “{”, otherwise CSV with a header row."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if "\x00" in (text or ""):
        return [], ["variables: NUL characters (\\u0000) are not allowed."]
    if not lines:
        return [], ["variables: write at least one row (CSV with a header row, or JSON lines)."]
    if lines[0].lstrip().startswith("{"):
        rows, errors = [], []
        for number, line in enumerate(lines, start=1):
            try:
                row = json.loads(line)
            except ValueError as exc:
                errors.append(f"variables, line {number}: not JSON ({exc.msg}).")
                continue
            if not isinstance(row, dict):
                errors.append(f"variables, line {number}: expected an object of variables.")
                continue
            rows.append(row)
        return rows, errors
    reader = csv.reader(io.StringIO("\n".join(lines)))
    header = [name.strip() for name in next(reader)]
    if not all(header) or len(set(header)) != len(header):
        return [], ["variables: the CSV's first row names each column once (no empty names)."]
    rows, errors = [], []
    for number, values in enumerate(reader, start=2):
        if len(values) != len(header):
            errors.append(f"variables, line {number}: {len(values)} values for {len(header)} columns.")
            continue
        rows.append(dict(zip(header, values, strict=True)))
    return rows, errors


def build_requests(version, rows: list[dict], model: str = "") -> tuple[list[dict], list[str]]:
    """The chat request bodies of the rows (the chosen model, else the version's), or the errors by row."""
    if len(rows) > MAX_ROWS:
        return [], [f"variables: at most {MAX_ROWS} rows per batch (got {len(rows)})."]
    bodies, errors = [], []
    for number, row in enumerate(rows, start=1):
        try:
            body = compile_request(version, row)
        except CompileError as exc:
            errors.append(f"variables, row {number}: {exc}")
            continue
        body["model"] = model or version.model_id
        body.pop("stream", None)
        body.pop("stream_options", None)
        bodies.append(body)
    return bodies, errors[:MAX_ERRORS]
