"""What a run sends, by its scope: the whole grid, the cells not yet done, a row, a column, a cell, or the done
cells whose model grader has no verdict yet (judged again)."""

from playground.evaluate import graders
from playground.evaluate.models import Cell, Evaluation


def select_cells(evaluation: Evaluation, scope: str, target) -> set[tuple[int, int]] | list[int] | None:
    """What a run of `scope` sends: the (case, variant) pairs of the latest run's grid (None: every one), or for
    "judge" the ids of the latest run's cells to judge again; an empty set when nothing matches."""
    if scope == "judge":
        return _unjudged(evaluation)
    if scope == "all":
        return None
    variants = list(evaluation.variants.values_list("pk", flat=True))
    keys = {(c, v) for c in evaluation.cases.values_list("pk", flat=True) for v in variants}
    if scope == "missing":
        run = evaluation.latest_run()
        done = set(run.cells.filter(status=Cell.DONE).values_list("case_id", "variant_id")) if run else set()
        return keys - done
    if scope == "row":
        return {key for key in keys if key[0] == target}
    if scope == "column":
        return {key for key in keys if key[1] == target}
    if scope == "cell":
        # Any run's cell names its place in the grid: the page may still show the run before.
        cell = evaluation.cells.filter(pk=target).values_list("case_id", "variant_id").first()
        return {cell} & keys if cell else set()
    return set()


def _unjudged(evaluation: Evaluation) -> list[int]:
    """Done cells of the latest run whose variant has a model grader and that have no verdict of its present
    configuration (a batch's results, or cells whose rubric changed): judged again without asking their model
    again."""
    run = evaluation.latest_run()
    if run is None:
        return []
    cells = run.cells.filter(status=Cell.DONE).select_related("variant")
    cells = cells.order_by("case__position", "variant__position")
    wanted = []
    for cell in cells:
        judge = cell.variant.graders.get("judge")
        if judge and (cell.grades or {}).get("judge", {}).get("of") != graders.judge_key(judge):
            wanted.append(cell.pk)
    return wanted
