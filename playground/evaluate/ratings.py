"""People's ratings of a run's cells, and how often the graders agree with them (percent and Cohen's kappa)."""

from collections import Counter
from dataclasses import dataclass

from playground.evaluate.models import Cell, Rating, Run


def rate(cell: Cell, user, *, passed: bool | None, score: int | None, comment: str) -> Rating | None:
    """The user's rating of the cell, made or changed; a rating left with nothing in it is deleted (None)."""
    if passed is None and score is None and not comment:
        Rating.objects.filter(cell=cell, rater=user).delete()
        return None
    rating, _ = Rating.objects.update_or_create(
        cell=cell, rater=user, defaults={"passed": passed, "score": score, "comment": comment}
    )
    return rating


def raters(run: Run) -> list[tuple[str, int]]:
    """Who rated the run's answers and how many each, most first."""
    counts = Counter(r.rater.get_username() for r in Rating.objects.filter(cell__run=run).select_related("rater"))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


@dataclass
class Agreement:
    """How two raters agree on pass or fail over n items: the share of items they agree on and Cohen's kappa,
    which discounts the agreement chance alone would give. kappa is None when it is undefined: no items, or both
    raters gave one and the same verdict to every item (chance agreement is then 1 and kappa is 0/0)."""

    n: int
    agreed: int
    kappa: float | None

    @property
    def percent(self) -> float | None:
        return 100 * self.agreed / self.n if self.n else None


def cohen_kappa(pairs: list[tuple[bool, bool]]) -> Agreement:
    """Agreement of the first verdict of each pair with the second: kappa = (po − pe) / (1 − pe), where po is the
    observed agreement and pe = pA·pB + (1 − pA)(1 − pB) the agreement expected by chance from each rater's
    pass rate (pA, pB)."""
    n = len(pairs)
    if not n:
        return Agreement(0, 0, None)
    agreed = sum(a == b for a, b in pairs)
    p_a = sum(bool(a) for a, _ in pairs) / n
    p_b = sum(bool(b) for _, b in pairs) / n
    expected = p_a * p_b + (1 - p_a) * (1 - p_b)
    if expected == 1:
        return Agreement(n, agreed, None)
    return Agreement(n, agreed, (agreed / n - expected) / (1 - expected))


def agreement(run: Run) -> list[tuple[str, Agreement]]:
    """Per grader of the run, its pass or fail against each person's verdict on the same answer (a person's pass
    or fail, else their score read as 4–5 pass): one pair per (cell, person), over the run's done cells."""
    pairs: dict[str, list[tuple[bool, bool]]] = {}
    kinds: set[str] = set()
    cells = run.cells.filter(status=Cell.DONE).prefetch_related("ratings")
    for cell in cells:
        kinds.update(cell.grades or {})
        verdicts = [r.verdict for r in cell.ratings.all() if r.verdict is not None]
        for kind, grade in (cell.grades or {}).items():
            for verdict in verdicts:
                pairs.setdefault(kind, []).append((bool(grade.get("pass")), verdict))
    return [(kind, cohen_kappa(pairs.get(kind, []))) for kind in sorted(kinds)]
