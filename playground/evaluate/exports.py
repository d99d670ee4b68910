"""An evaluation's downloads: every row and variant as CSV (for spreadsheets) or JSONL (the whole record)."""

import csv
import io
import json

from playground.evaluate.models import Cell, Evaluation
from playground.evaluate.services import grid


def _cell_record(cell: Cell | None) -> dict:
    if cell is None:
        return {}
    return {
        "status": cell.status,
        "source": cell.source,
        "output": cell.output,
        "error": cell.error,
        "prompt_tokens": cell.prompt_tokens,
        "completion_tokens": cell.completion_tokens,
        "ttft_ms": cell.ttft_ms,
        "latency_ms": cell.latency_ms,
        "passed": cell.passed,
        "grades": cell.grades,
        "thumb": cell.thumb,
        "note": cell.note,
        "version": cell.version.ref if cell.version_id else None,  # the prompt version its run sent
    }


def export_jsonl(evaluation: Evaluation) -> str:
    variants, rows, _ = grid(evaluation)
    lines = []
    for case, cells in rows:
        record = {
            "row": case.position + 1,
            "variables": case.values,
            "expected": case.expected,
            "results": {
                v.label: {"model": v.model, **_cell_record(cell)} for v, cell in zip(variants, cells, strict=True)
            },
        }
        lines.append(json.dumps(record, ensure_ascii=False))
    return "\n".join(lines) + ("\n" if lines else "")


CSV_FIELDS = ("output", "status", "error", "passed", "latency_ms", "ttft_ms", "prompt_tokens", "completion_tokens")


def _csv_safe(value) -> str:
    """Spreadsheets run cells that start with = + - @ as formulas; a leading quote keeps them text."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


# The model grader's verdict: pass or fail, its score (on the 1–5 scale) and its reason; empty when not judged.
JUDGE_FIELDS = ("judge_pass", "judge_score", "judge_reason")


def _judge_record(record: dict) -> dict:
    verdict = (record.get("grades") or {}).get("judge") or {}
    if not verdict:
        return {}
    return {
        "judge_pass": verdict.get("pass"),
        "judge_score": verdict.get("score"),
        "judge_reason": verdict.get("detail"),
    }


def export_csv(evaluation: Evaluation) -> str:
    variants, rows, _ = grid(evaluation)
    out = io.StringIO()
    writer = csv.writer(out)
    fields = (*CSV_FIELDS, *JUDGE_FIELDS, "thumb", "note")
    header = ["row", *evaluation.columns, "expected"]
    for v in variants:
        header += [f"{v.label}:{name}" for name in fields]
    writer.writerow(header)
    for case, cells in rows:
        line = [case.position + 1, *(case.values.get(c, "") for c in evaluation.columns), case.expected]
        for cell in cells:
            record = _cell_record(cell)
            record.update(_judge_record(record))
            line += [record.get(name) for name in fields]
        writer.writerow([_csv_safe(value) for value in line])
    return out.getvalue()
