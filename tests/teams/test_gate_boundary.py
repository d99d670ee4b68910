"""The gate's boundary, read from the source: only connections/gate.py turns a stored key into an Endpoint, and no
feature (nor connections or catalog) imports the teams app, nor teams a feature."""

import re
from pathlib import Path

import playground

ROOT = Path(playground.__file__).parent
FEATURES = [
    "chat",
    "rerank",
    "speech",
    "batches",
    "evaluate",
    "prompts",
    "datasets",
    "sharing",
    "connections",
    "catalog",
    "upstream",
    "lib",
]


def sources(*apps: str):
    for app in apps:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" not in path.parts:
                yield path, path.read_text()


def test_only_the_gate_makes_an_endpoint_from_a_stored_key():
    makers = [p.relative_to(ROOT).as_posix() for p, text in sources(".") if re.search(r"\bEndpoint\(", text)]
    assert makers == ["connections/gate.py"]
    readers = [
        p.relative_to(ROOT).as_posix()
        for p, text in sources(".")
        if re.search(r"\.get_key\(\)|crypto\.decrypt\(", text) and "localapi" not in p.parts
    ]
    # models.py: get_key() itself (and the Local key's rotation); keycheck.py: the boot check that keys decrypt.
    assert sorted(readers) == ["connections/gate.py", "connections/keycheck.py", "connections/models.py"]


def test_no_feature_imports_teams():
    importers = [
        p.relative_to(ROOT).as_posix()
        for p, text in sources(*FEATURES)
        if re.search(r"^\s*(from playground\.teams|import playground\.teams|from playground import teams)", text, re.M)
    ]
    assert importers == []


def test_teams_imports_no_feature():
    """Teams reads the ledger and manages members, budgets and the library: a feature's objects are not its business
    (a conversation's lost team connection is chat's own, chat/signals.py)."""
    features = "|".join(["chat", "rerank", "speech", "batches", "evaluate", "prompts"])
    importers = [
        p.relative_to(ROOT).as_posix()
        for p, text in sources("teams")
        if re.search(rf"^\s*(from playground\.({features})\b|import playground\.({features})\b)", text, re.M)
        or re.search(rf"get_model\(\"({features})\"", text)
    ]
    assert importers == []
