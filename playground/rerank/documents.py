"""Documents for a rerank run from pasted text or an uploaded file: one per line, CSV or JSON Lines.

- lines: every non-blank line is a document.
- csv: the `text` column when the header row has one, else the first column of every row.
- jsonl: each line an object with a `text` or `document` field (a string, or an object with `text`),
  or a bare JSON string.
Errors name the line, so a file of thousands of documents can be fixed.
"""

import csv
import io
import json

from playground import inputs

FORMATS = [("lines", "One per line"), ("csv", "CSV"), ("jsonl", "JSON Lines")]
MAX_DOCUMENTS = 20000
MAX_FILE_BYTES = 20 * 1024 * 1024


class DocumentsError(ValueError):
    pass


def format_for_filename(name: str) -> str:
    lowered = name.lower()
    if lowered.endswith(".csv"):
        return "csv"
    if lowered.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if lowered.endswith(".txt"):
        return "lines"
    raise DocumentsError(f"documents_file: {name!r} is not a .txt, .csv or .jsonl file.")


def parse(text: str, fmt: str) -> list[str]:
    text = text.lstrip("\ufeff")
    if "\x00" in text:
        # PostgreSQL cannot store NUL, and no document needs one: refuse it before anything is saved.
        raise DocumentsError("documents: NUL characters (\\u0000) are not allowed.")
    if fmt == "csv":
        documents = _csv(text)
    elif fmt == "jsonl":
        documents = _jsonl(text)
    else:
        documents = [line.strip() for line in text.splitlines() if line.strip()]
    if not documents:
        raise DocumentsError("documents: at least 1 document is required.")
    if len(documents) > MAX_DOCUMENTS:
        raise DocumentsError(f"documents: at most {MAX_DOCUMENTS} documents (got {len(documents)}).")
    return documents


def parse_upload(name: str, data: bytes) -> list[str]:
    if len(data) > MAX_FILE_BYTES:
        raise DocumentsError(f"documents_file: at most {MAX_FILE_BYTES // (1024 * 1024)} MB.")
    fmt = format_for_filename(name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentsError(f"documents_file: not UTF-8 text (byte {exc.start}).") from None
    return parse(text, fmt)


def _csv(text: str) -> list[str]:
    reader = csv.reader(io.StringIO(text))
    documents: list[str] = []
    column = 0
    try:
        for position, row in enumerate(reader):
            if position == 0:
                header = [cell.strip().lower() for cell in row]
                if "text" in header:
                    column = header.index("text")
                    continue
            if not any(cell.strip() for cell in row):
                continue
            if column >= len(row):
                raise DocumentsError(f"documents: line {reader.line_num}: no column {column + 1} (the text column).")
            value = row[column].strip()
            if not value:
                raise DocumentsError(f"documents: line {reader.line_num}: the text cell is empty.")
            documents.append(value)
    except csv.Error as exc:
        raise DocumentsError(f"documents: line {reader.line_num}: not valid CSV ({exc}).") from None
    return documents


def _jsonl(text: str) -> list[str]:
    documents = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = inputs.loads(line)
        except inputs.InputError as exc:
            rule = str(exc).partition(": ")[2]
            raise DocumentsError(f"documents: {rule} (line {number}).") from None
        except ValueError as exc:
            raise DocumentsError(f"documents: line {number}: not valid JSON ({exc.msg}).") from None
        if isinstance(item, dict):
            value = item.get("text", item.get("document"))
            if isinstance(value, dict):
                value = value.get("text")
        else:
            value = item
        if not isinstance(value, str):
            raise DocumentsError(f"documents: line {number}: expected a `text` or `document` string field.")
        if not value.strip():
            raise DocumentsError(f"documents: line {number}: the text is empty.")
        if "\x00" in value:
            raise DocumentsError("documents: NUL characters (\\u0000) are not allowed.")
        documents.append(value)
    return documents


def as_text(documents: list[str]) -> tuple[str, str]:
    """Documents back into the form's textarea: one per line, or JSON Lines when one spans several lines."""
    if any("\n" in document or "\r" in document for document in documents):
        return "\n".join(json.dumps({"text": d}, ensure_ascii=False) for d in documents), "jsonl"
    return "\n".join(documents), "lines"
