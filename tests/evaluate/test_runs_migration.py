"""Evaluations from before runs were kept: their cells become their run 1 (with their variants as the run's
snapshot), each thumb and note a rating by the owner; and back on a reverse. The real migrations run on this
database (SQLite or PostgreSQL, as configured)."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

from playground.connections.models import ensure_local_connection
from playground.evaluate.models import Cell, Evaluation, Rating, Run
from playground.prompts.models import Prompt, PromptVersion

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]
BEFORE = [("evaluate", "0006_remove_evaluation_prompt_versions")]
AFTER = MigrationLoader(None).graph.leaf_nodes("evaluate")  # the latest, as the models are


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _old_evaluation(old, owner, local, *, ran: bool = True) -> dict:
    """An evaluation as 0006 kept it: two variants (B pinned to v1), three rows of done, error and empty cells."""
    Evaluation_, Case, Variant_, Cell_ = (
        old.get_model("evaluate", n) for n in ("Evaluation", "TestCase", "Variant", "Cell")
    )
    prompt = Prompt.objects.create(owner=owner, name=f"P{Evaluation_.objects.count()}")
    v1 = PromptVersion.objects.create(prompt=prompt, number=1, template="{{q}}", author=owner)
    v2 = PromptVersion.objects.create(prompt=prompt, number=2, template="Q: {{q}}", author=owner)
    evaluation = Evaluation_.objects.create(
        owner_id=owner.pk,
        title="Old",
        connection_id=local.pk,
        columns=["q"],
        prompt_id=prompt.pk,
        last_run_cells=4,
        last_run_ms=1234,
    )
    a = Variant_.objects.create(evaluation=evaluation, position=0, model="local/chat", params={"temperature": "0.2"})
    b = Variant_.objects.create(
        evaluation=evaluation, position=1, model="local/chat-lite", prompt_id=v1.pk, graders={"contains": ""}
    )
    statuses = ["done", "error", "empty"] if ran else ["empty"] * 3
    for n, status in enumerate(statuses):
        case = Case.objects.create(evaluation=evaluation, position=n, values={"q": f"q{n}"}, expected="X")
        for variant in (a, b):
            Cell_.objects.create(
                evaluation=evaluation,
                case=case,
                variant=variant,
                status=status,
                source="live" if status != "empty" else "",
                output=f"out {n}{variant.position}" if status == "done" else "",
                grades={"contains": {"pass": variant == b}} if status == "done" else {},
                thumb=(1 if variant == a else -1) if status == "done" else None,
                note=f"note {n}" if status != "empty" else "",
                version_id=(v1.pk if variant == b else v2.pk) if status != "empty" else None,
            )
    return {"pk": evaluation.pk, "v1": v1.pk, "v2": v2.pk}


def test_cells_become_run_one_and_thumbs_become_the_owners_ratings_and_back(alice, bob):
    local = ensure_local_connection(alice)
    try:
        old = _migrate(BEFORE)
        made = _old_evaluation(old, alice, local)
        blank = _old_evaluation(old, bob, ensure_local_connection(bob), ran=False)

        _migrate(AFTER)
        evaluation = Evaluation.objects.get(pk=made["pk"])
        run = Run.objects.get(evaluation=evaluation)
        assert (run.number, run.started_by, run.source, run.status, run.wall_ms) == (1, alice, "live", "done", 1234)
        assert [(v["label"], v["model"], v["prompt_version"], v["graders"]) for v in run.variants] == [
            ("A", "local/chat", made["v2"], {}),
            ("B", "local/chat-lite", made["v1"], {"contains": ""}),
        ]
        assert run.variants[0]["params"] == {"temperature": "0.2"} and run.variants[1]["prompt_ref"].endswith("@v1")
        cells = Cell.objects.filter(evaluation=evaluation)
        assert cells.count() == 6 and set(cells.values_list("run", flat=True)) == {run.pk}
        assert sorted(cells.values_list("status", flat=True)) == ["done", "done", "empty", "empty", "error", "error"]
        ratings = Rating.objects.filter(cell__run=run).select_related("cell__variant")
        assert {(r.cell.case.position, r.cell.variant.position, r.passed, r.comment) for r in ratings} == {
            (0, 0, True, "note 0"),
            (0, 1, False, "note 0"),
            (1, 0, None, "note 1"),
            (1, 1, None, "note 1"),
        }
        assert all(r.rater == alice for r in ratings)
        # An evaluation that never ran keeps no run, and none of its placeholder cells.
        assert not Run.objects.filter(evaluation_id=blank["pk"]).exists()
        assert not Cell.objects.filter(evaluation_id=blank["pk"]).exists()

        back = _migrate(BEFORE)
        OldCell = back.get_model("evaluate", "Cell")
        restored = OldCell.objects.filter(evaluation_id=made["pk"]).order_by("case__position", "variant__position")
        assert [(c.status, c.thumb, c.note) for c in restored] == [
            ("done", 1, "note 0"),
            ("done", -1, "note 0"),
            ("error", None, "note 1"),
            ("error", None, "note 1"),
            ("empty", None, ""),
            ("empty", None, ""),
        ]
        assert OldCell.objects.filter(evaluation_id=blank["pk"], status="empty").count() == 6
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
