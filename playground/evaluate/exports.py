"""An evaluation's downloads: one run's rows and variants as CSV (for spreadsheets) or JSONL (the whole record),
each line saying which run it is of (evaluation, run number, when it started, the prompt version each variant
sent)."""

import csv
import io
import json
import re
from collections.abc import Callable

from django.http import Http404, HttpResponse

from playground.evaluate.compare import compare
from playground.evaluate.models import Cell, Evaluation, Run
from playground.evaluate.services import grid


def download(title: str, suffix: str, kind: str, *, csv: Callable[[], str], jsonl: Callable[[], str]) -> HttpResponse:
    """The file of `kind` (csv or jsonl; anything else is a 404) as an attachment named after the evaluation's
    title and `suffix` ("-run-2", "-run-2-vs-1")."""
    makers = {"csv": (csv, "text/csv; charset=utf-8"), "jsonl": (jsonl, "application/jsonl")}
    if kind not in makers:
        raise Http404("No such export.")
    make, content_type = makers[kind]
    name = (re.sub(r"[^A-Za-z0-9_-]+", "_", title).strip("_") or "evaluation") + suffix
    response = HttpResponse(make(), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{name}.{kind}"'
    return response


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


# ---------------------------------------------------------------- two runs compared


def _moves(moves) -> str:
    """Each grader's move in a few words: "judge: fail → pass (2 → 4)"."""
    words = {True: "pass", False: "fail", None: "–"}
    said = []
    for m in moves:
        scores = f" ({m.a_score} → {m.b_score})" if m.a_score is not None and m.b_score is not None else ""
        said.append(f"{m.kind}: {words[m.a_pass]} → {words[m.b_pass]}{scores}")
    return "; ".join(said)


def _comparison_identity(a: Run, b: Run) -> dict:
    return {
        "evaluation": a.evaluation.title,
        "run_a": a.number,
        "run_a_started": a.started.isoformat(),
        "run_b": b.number,
        "run_b_started": b.started.isoformat(),
    }


def comparison_jsonl(a: Run, b: Run) -> str:
    """Run B against run A, one line per compared answer, each naming both runs (and the prompt versions sent)."""
    result = compare(a, b)
    identity = _comparison_identity(a, b)
    identity["prompt_versions_a"] = {v["label"]: v["prompt_ref"] for v in a.variants}
    identity["prompt_versions_b"] = {v["label"]: v["prompt_ref"] for v in b.variants}
    lines = []
    for pair in result.pairs:
        record = {
            **identity,
            "summary": result.summary(),
            "row": pair.case.position + 1,
            "variant": pair.label,
            "variables": pair.case.values,
            "expected": pair.case.expected,
            "outcome": pair.outcome,
            "moves": [
                {"grader": m.kind, "a_pass": m.a_pass, "b_pass": m.b_pass, "a_score": m.a_score, "b_score": m.b_score}
                for m in pair.moves
            ],
            "a": _cell_record(pair.a),
            "b": _cell_record(pair.b),
        }
        lines.append(json.dumps(record, ensure_ascii=False))
    return "\n".join(lines) + ("\n" if lines else "")


def comparison_csv(a: Run, b: Run) -> str:
    """Run B against run A for spreadsheets: one line per compared answer, the two answers side by side."""
    result = compare(a, b)
    identity = _comparison_identity(a, b)
    columns = a.evaluation.columns
    out = io.StringIO()
    writer = csv.writer(out)
    sides = [f"{side}:{name}" for side in ("a", "b") for name in ("status", "output", "error", "passed")]
    writer.writerow([*identity, "row", "variant", *columns, "expected", "outcome", "graders", *sides])
    for pair in result.pairs:
        line = [*identity.values(), pair.case.position + 1, pair.label]
        line += [*(pair.case.values.get(c, "") for c in columns), pair.case.expected, pair.outcome, _moves(pair.moves)]
        for cell in (pair.a, pair.b):
            line += [cell.status, cell.output, cell.error, cell.passed]
        writer.writerow([_csv_safe(value) for value in line])
    return out.getvalue()
