"""Old-style evaluations (their own prompt versions) move to library prompts with nothing lost: every version with
its number, texts and date, every variant's pinned version, every cell with its results and the version it ran
with; and back on a reverse. The real migrations run on this database (SQLite or PostgreSQL, as configured)."""

import datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.utils import timezone

from playground.connections.models import ensure_local_connection
from playground.evaluate.models import Cell, Evaluation, Variant
from playground.prompts.models import Prompt, PromptVersion

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]
BEFORE = [("evaluate", "0003_evaluation_concurrency")]
AFTER = MigrationLoader(None).graph.leaf_nodes("evaluate")  # the latest, as the models are; through runs too
TEXTS = [("", "Capital of {{country}}?"), ("Be brief.", "Capital of {{country}}?"), ("Be brief.", "{{country}}:")]
DAY = datetime.datetime(2026, 5, 1, 12, tzinfo=datetime.UTC)


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _old_evaluation(old, owner, title: str, local) -> dict:
    """An evaluation as 0003 kept it: three versions, variant A on the latest, B pinned to v2, cells of each kind."""
    Evaluation_, Version, Case, Variant_, Cell_ = (
        old.get_model("evaluate", n) for n in ("Evaluation", "PromptVersion", "TestCase", "Variant", "Cell")
    )
    evaluation = Evaluation_.objects.create(owner_id=owner.pk, title=title, connection_id=local.pk, columns=["country"])
    versions = []
    for number, (system, user) in enumerate(TEXTS, start=1):
        version = Version.objects.create(evaluation=evaluation, number=number, system=system, user=user)
        Version.objects.filter(pk=version.pk).update(created=DAY + datetime.timedelta(days=number))
        versions.append(version)
    a = Variant_.objects.create(evaluation=evaluation, position=0, model="local/chat", params={"temperature": "0.2"})
    b = Variant_.objects.create(
        evaluation=evaluation, position=1, model="local/chat-lite", prompt=versions[1], graders={"contains": ""}
    )
    cells = {}
    for n, status in enumerate(["done", "error", "empty"]):
        case = Case.objects.create(evaluation=evaluation, position=n, values={"country": f"Land{n}"}, expected="X")
        for variant in (a, b):
            cell = Cell_.objects.create(
                evaluation=evaluation,
                case=case,
                variant=variant,
                status=status,
                source="live" if status != "empty" else "",
                output=f"out {n}{variant.position}" if status == "done" else "",
                error="Timed out" if status == "error" else "",
                grades={"contains": {"pass": True}} if status == "done" else {},
                thumb=1 if status == "done" else None,
                note=f"note {n}",
                prompt_tokens=7 if status == "done" else None,
                runs=1 if status != "empty" else 0,
            )
            cells[cell.pk] = (variant.position, status)
    Evaluation_.objects.filter(pk=evaluation.pk).update(updated=DAY)
    return {"pk": evaluation.pk, "cells": cells, "b_pin": versions[1].pk}


def test_evaluations_move_to_library_prompts_with_nothing_lost_and_back(alice, bob):
    Prompt.objects.create(owner=alice, name="Capitals")  # the name is taken in alice's library already
    locals_ = {alice: ensure_local_connection(alice), bob: ensure_local_connection(bob)}
    try:
        old = _migrate(BEFORE)
        made = [
            _old_evaluation(old, alice, "Capitals", locals_[alice]),
            _old_evaluation(old, alice, "Capitals", locals_[alice]),
            _old_evaluation(old, bob, "Capitals", locals_[bob]),
        ]
        empty = old.get_model("evaluate", "Evaluation").objects.create(owner_id=bob.pk, title="Blank/slate")

        _migrate(AFTER)
        names = []
        for item, owner in zip(made, (alice, alice, bob), strict=True):
            evaluation = Evaluation.objects.get(pk=item["pk"])
            prompt = evaluation.prompt
            assert (prompt.owner, prompt.team) == (owner, None)
            names.append(prompt.name)
            versions = list(evaluation.versions())
            assert [(v.number, v.system, v.template) for v in versions] == [
                (n, s, u) for n, (s, u) in enumerate(TEXTS, start=1)
            ]
            assert [v.created for v in versions] == [DAY + datetime.timedelta(days=n) for n in (1, 2, 3)]
            assert all(v.author == owner for v in versions)
            assert evaluation.updated == DAY  # the list's order by last change is kept
            a, b = Variant.objects.filter(evaluation=evaluation).order_by("position")
            assert a.prompt is None and (a.params, a.model) == ({"temperature": "0.2"}, "local/chat")
            assert (b.prompt.prompt, b.prompt.number, b.graders) == (prompt, 2, {"contains": ""})
            cells = Cell.objects.filter(evaluation=evaluation)
            assert {c.pk: (c.variant.position, c.status) for c in cells} == item["cells"]
            for cell in cells:
                ran = cell.status != "empty"
                assert cell.version == ((b.prompt if cell.variant == b else versions[-1]) if ran else None)
                rating = cell.ratings.get()
                assert rating.rater == owner and rating.comment == f"note {cell.case.position}"
                if cell.status == "done":
                    assert cell.output == f"out {cell.case.position}{cell.variant.position}"
                    assert (cell.grades, rating.passed, cell.prompt_tokens) == ({"contains": {"pass": True}}, True, 7)
                if cell.status == "error":
                    assert cell.error == "Timed out"
        assert names == ["Capitals (2)", "Capitals (3)", "Capitals"]  # unique per owner
        blank = Evaluation.objects.get(pk=empty.pk)
        assert blank.prompt.name == "Blank-slate" and blank.latest_prompt() is None
        assert PromptVersion.objects.filter(prompt__owner=alice).count() == 6

        back = _migrate(BEFORE)
        OldVersion, OldVariant = back.get_model("evaluate", "PromptVersion"), back.get_model("evaluate", "Variant")
        for item in made:
            versions = OldVersion.objects.filter(evaluation_id=item["pk"]).order_by("number")
            assert [(v.number, v.system, v.user) for v in versions] == [
                (n, s, u) for n, (s, u) in enumerate(TEXTS, start=1)
            ]
            pins = OldVariant.objects.filter(evaluation_id=item["pk"]).order_by("position")
            assert [p.prompt.number if p.prompt_id else None for p in pins] == [None, 2]
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    assert timezone.now() > DAY
