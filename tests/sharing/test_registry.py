"""Kinds plug in: sharing names a feature only by dotted path, and every kind lives in its own app."""

import ast
from pathlib import Path

import pytest
from django.conf import settings
from django.http import Http404

from playground.sharing import kinds

ROOT = Path(__file__).resolve().parents[2] / "playground"
FEATURES = ("chat", "rerank", "speech", "batches", "evaluate", "teams")


def _imports(folder: Path) -> list[tuple[str, str]]:
    found = []
    for path in sorted(folder.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            found += [(str(path.relative_to(ROOT)), name) for name in names]
    return found


def test_sharing_imports_no_feature_app_nor_teams():
    reaching = [
        (where, name)
        for where, name in _imports(ROOT / "sharing")
        if any(name == f"playground.{app}" or name.startswith(f"playground.{app}.") for app in FEATURES)
    ]
    assert reaching == []


def test_the_team_library_reads_kinds_from_the_registry_not_from_sharing_views():
    assert not [name for _, name in _imports(ROOT / "teams") if name.startswith("playground.sharing.views")]


def test_every_kind_is_declared_in_the_app_of_its_model():
    assert [kind.name for kind in kinds.all_kinds()] == [
        "conversation",
        "rerank",
        "speech",
        "batch",
        "evaluation",
        "evaluation-run",
        "evaluation-comparison",
        "prompt",
    ]
    for path, kind in zip(settings.SHARE_KINDS, kinds.all_kinds(), strict=True):
        app = kind.model.split(".")[0]
        assert path.startswith(f"playground.{app}.sharing."), path
        assert type(kind).__module__ == f"playground.{app}.sharing"


def test_an_unknown_kind_is_a_404_and_an_unregistered_row_is_named():
    with pytest.raises(Http404):
        kinds.get("spreadsheet")

    class Stranger:
        class _meta:
            label = "elsewhere.Thing"

    with pytest.raises(LookupError, match=r"elsewhere\.Thing is not a kind of share"):
        kinds.of(Stranger())
