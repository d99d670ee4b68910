"""The gate's policy tables (team, membership, ledger, lease) are its own: read from the models' relations, no
foreign key points up (from a lower floor to a higher one), and the gate's floor names no app above it by string."""

import re
from pathlib import Path

from django.apps import apps

import playground

# The apps with models, from the ground up: an app may point at its own floor and below, never above.
FLOORS = {
    "auth": 0,
    "contenttypes": 0,
    "connections": 1,  # the gate: connections, leases, teams, memberships, the ledger
    "localapi": 1,
    "catalog": 2,
    "sharing": 3,
    "prompts": 3,  # a prompt (owned by a user or a team) that chat, batches and evaluate run
    "datasets": 3,  # rows (owned by a user or a team) that chat, sharing and evaluate add to; evaluate reads
    "chat": 4,
    "rerank": 4,
    "speech": 4,
    "batches": 4,
    "evaluate": 5,  # a grid may run as a batch
    "teams": 6,  # the pages, invites and audit log
    "sso": 7,
    "operators": 8,
}


def relations():
    for model in apps.get_models():
        if not model.__module__.startswith("playground."):
            continue
        for field in model._meta.get_fields():
            if field.is_relation and field.concrete and field.related_model is not None:
                yield model, field


def test_every_project_app_with_models_has_a_floor():
    labels = {model._meta.app_label for model, _ in relations()}
    assert labels <= set(FLOORS), labels - set(FLOORS)


def test_no_foreign_key_points_up():
    up = [
        f"{model._meta.label}.{field.name} -> {field.related_model._meta.label}"
        for model, field in relations()
        if FLOORS.get(field.related_model._meta.app_label, 0) > FLOORS[model._meta.app_label]
    ]
    assert up == []


def test_the_policy_tables_are_the_gates():
    for name in ("Team", "Membership", "UsageRecord", "Lease"):
        assert apps.get_model("connections", name)._meta.app_label == "connections"
    assert not any(
        m._meta.app_label == "teams" and m.__name__ in ("Team", "Membership", "UsageRecord") for m in apps.get_models()
    )


def test_the_gates_floor_names_no_app_above_it():
    root = Path(playground.__file__).parent / "connections"
    named = [
        path.name
        for path in root.rglob("*.py")
        if "migrations" not in path.parts
        and re.search(r"get_model\(|\"(teams|chat|rerank|speech|batches|evaluate|sharing)\.\w+\"", path.read_text())
    ]
    assert named == []
