"""Two runs of one evaluation compared case by case (run A the earlier or base one, run B the other).

For each row × variant both runs have, B's cell against A's:

- **failed**: B's cell has no answer (error, stopped, skipped or never run);
- per grader both cells carry (every grader of B's when A's cell has no answer, A counting as failing them), a
  grader *moves up* when it fails in A and passes in B, or passes or fails in both and its score (the judge's
  1–5) rises; it *moves down* the other way round;
- **improved**: some grader moved up and none down; **regressed**: some moved down and none up;
- **changed**: graders moved both ways, or none moved but the answer's text differs (or A had none);
- **unchanged**: no grader moved and the answer is the same text.

Rows only one run has (added or removed between them) are left out, and the page says how many."""

from collections import Counter
from dataclasses import dataclass, field

from playground.evaluate.models import Cell, Run
from playground.prompts.diffing import line_diff

IMPROVED, REGRESSED, CHANGED, UNCHANGED, FAILED = "improved", "regressed", "changed", "unchanged", "failed"
OUTCOMES = (IMPROVED, REGRESSED, CHANGED, UNCHANGED, FAILED)


@dataclass
class Move:
    kind: str
    a_pass: bool | None
    b_pass: bool
    a_score: int | None = None
    b_score: int | None = None

    @property
    def delta(self) -> int | None:
        if self.a_score is None or self.b_score is None:
            return None
        return self.b_score - self.a_score


@dataclass
class Pair:
    case: object
    label: str
    a: Cell
    b: Cell
    outcome: str = UNCHANGED
    moves: list[Move] = field(default_factory=list)

    def diff(self) -> list[tuple[str, str]]:
        return line_diff(self.a.output, self.b.output)


def _done(cell: Cell | None) -> bool:
    return cell is not None and cell.status == Cell.DONE


def classify(a: Cell | None, b: Cell | None) -> tuple[str, list[Move]]:
    """The outcome of B's cell against A's (see the module's docstring) and each grader's move."""
    if not _done(b):
        return FAILED, []
    a_grades = (a.grades or {}) if _done(a) else {}
    kinds = sorted(set(b.grades or {}) & set(a_grades)) if _done(a) else sorted(b.grades or {})
    ups = downs = 0
    moves = []
    for kind in kinds:
        was, now = a_grades.get(kind) or {}, b.grades[kind]
        move = Move(kind, was.get("pass") if was else None, bool(now.get("pass")), was.get("score"), now.get("score"))
        if bool(move.a_pass) != move.b_pass:
            ups, downs = ups + move.b_pass, downs + (not move.b_pass)
        elif move.delta:
            ups, downs = ups + (move.delta > 0), downs + (move.delta < 0)
        moves.append(move)
    if ups and not downs:
        return IMPROVED, moves
    if downs and not ups:
        return REGRESSED, moves
    if ups or not _done(a) or a.output != b.output:
        return CHANGED, moves
    return UNCHANGED, moves


@dataclass
class GraderDelta:
    """A grader over the compared cells: pass rate in each run (of the cells it graded) and mean score if any."""

    kind: str
    a_passed: int = 0
    a_graded: int = 0
    b_passed: int = 0
    b_graded: int = 0
    a_scores: list = field(default_factory=list)
    b_scores: list = field(default_factory=list)

    @staticmethod
    def _rate(passed: int, graded: int) -> float | None:
        return 100 * passed / graded if graded else None

    @property
    def a_rate(self):
        return self._rate(self.a_passed, self.a_graded)

    @property
    def b_rate(self):
        return self._rate(self.b_passed, self.b_graded)

    @property
    def rate_delta(self):
        return None if self.a_rate is None or self.b_rate is None else self.b_rate - self.a_rate

    @property
    def a_mean(self):
        return sum(self.a_scores) / len(self.a_scores) if self.a_scores else None

    @property
    def b_mean(self):
        return sum(self.b_scores) / len(self.b_scores) if self.b_scores else None

    @property
    def score_delta(self):
        return None if self.a_mean is None or self.b_mean is None else self.b_mean - self.a_mean


@dataclass
class Comparison:
    a: Run
    b: Run
    pairs: list[Pair]
    counts: Counter
    shared_rows: int
    only_a: int  # rows run A has and run B has not
    only_b: int
    graders: list[GraderDelta]

    def summary(self) -> str:
        """ "run 4 vs run 3: 12 improved, 3 regressed, 185 unchanged" (every outcome that occurs)."""
        parts = [f"{self.counts[o]} {o}" for o in OUTCOMES if self.counts[o]] or ["nothing to compare"]
        return f"run {self.b.number} vs run {self.a.number}: " + ", ".join(parts)


def _with_records(cells):
    return cells.select_related("version__prompt").prefetch_related("ratings__rater")


def compare(a: Run, b: Run) -> Comparison:
    """Run B against run A over the row × variant cells both have, in the grid's order."""
    # Both sides with what an export of them reads (the version sent, each person's rating): a query per table.
    cells_a = {(c.case_id, c.variant_id): c for c in _with_records(a.cells.all())}
    query = _with_records(b.cells.select_related("case", "variant")).order_by("case__position", "variant__position")
    pairs, rows_b = [], set()
    graders: dict[str, GraderDelta] = {}
    for cell in query:
        rows_b.add(cell.case_id)
        before = cells_a.get((cell.case_id, cell.variant_id))
        if before is None:
            continue
        outcome, moves = classify(before, cell)
        pairs.append(Pair(cell.case, cell.variant.label, before, cell, outcome, moves))
        for side, one in (("a", before), ("b", cell)):
            if not _done(one):
                continue
            for kind, grade in (one.grades or {}).items():
                delta = graders.setdefault(kind, GraderDelta(kind))
                setattr(delta, f"{side}_graded", getattr(delta, f"{side}_graded") + 1)
                setattr(delta, f"{side}_passed", getattr(delta, f"{side}_passed") + bool(grade.get("pass")))
                if grade.get("score") is not None:
                    getattr(delta, f"{side}_scores").append(grade["score"])
    rows_a = {case for case, _ in cells_a}
    return Comparison(
        a=a,
        b=b,
        pairs=pairs,
        counts=Counter(p.outcome for p in pairs),
        shared_rows=len(rows_a & rows_b),
        only_a=len(rows_a - rows_b),
        only_b=len(rows_b - rows_a),
        graders=[graders[k] for k in sorted(graders)],
    )
