"""An evaluation's downloads: one run's rows and variants as CSV (for spreadsheets) or JSONL (the whole record),
each line saying which run it is of (evaluation, run number, when it started, the prompt version each variant
sent)."""

import csv
import io
import json

from playground.evaluate.models import Cell, Evaluation, Run
from playground.evaluate.services import grid


def _ratings(cell: Cell) -> list[dict]:
    if cell.pk is None:
        return []
    return [
        {"rater": r.rater.get_username(), "pass": r.passed, "score": r.score, "comment": r.comment}
        for r in cell.ratings.all()
    ]


def _run_record(evaluation: Evaluation, run: Run | None) -> dict:
    if run is None:
        return {"evaluation": evaluation.title, "run": None}
    return {
        "evaluation": evaluation.title,
        "run": run.number,
        "run_started": run.started.isoformat(),
        "run_source": run.source,
        "prompt_versions": {v["label"]: v["prompt_ref"] for v in run.variants},
    }


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
        "ratings": _ratings(cell),
        "version": cell.version.ref if cell.version_id else None,  # the prompt version its run sent
    }


def export_jsonl(evaluation: Evaluation, run: Run | None = None) -> str:
    variants, rows, _ = grid(evaluation, run=run)
    identity = _run_record(evaluation, run)
    lines = []
    for case, cells in rows:
        record = {
            **identity,
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


def _people(record: dict) -> str:
    """Each person's rating in a few words: "alice: pass, 4/5, too long"."""
    said = []
    for rating in record.get("ratings") or []:
        words = [
            {True: "pass", False: "fail"}.get(rating["pass"], ""),
            f"{rating['score']}/5" if rating["score"] else "",
        ]
        words.append(rating["comment"])
        said.append(f"{rating['rater']}: " + ", ".join(w for w in words if w))
    return "; ".join(said)


def export_csv(evaluation: Evaluation, run: Run | None = None) -> str:
    variants, rows, _ = grid(evaluation, run=run)
    identity = _run_record(evaluation, run)
    versions = identity.get("prompt_versions") or {}
    out = io.StringIO()
    writer = csv.writer(out)
    fields = (*CSV_FIELDS, *JUDGE_FIELDS, "version", "ratings")
    header = ["evaluation", "run", "run_started", "row", *evaluation.columns, "expected"]
    for v in variants:
        header += [f"{v.label}:{name}" for name in fields]
    writer.writerow(header)
    for case, cells in rows:
        line = [identity["evaluation"], identity["run"], identity.get("run_started")]
        line += [case.position + 1, *(case.values.get(c, "") for c in evaluation.columns), case.expected]
        for variant, cell in zip(variants, cells, strict=True):
            record = _cell_record(cell)
            record.update(_judge_record(record))
            record["version"] = record.get("version") or versions.get(variant.label)
            record["ratings"] = _people(record)
            line += [record.get(name) for name in fields]
        writer.writerow([_csv_safe(value) for value in line])
    return out.getvalue()
