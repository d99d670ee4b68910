"""The dataset tests' rows and maker; their cast (alice, bob in her team Acme, carol in none) is tests/conftest.py's."""

from playground.datasets import services

ROWS = [
    {"values": {"question": "2+2?"}, "expected": "4"},
    {"values": {"question": "Capital of France?"}, "expected": "Paris"},
]


def make_dataset(owner, name="Arithmetic", team=None, rows=ROWS, columns=("question",)):
    dataset, _ = services.create(user=owner, team=team, name=name, columns=list(columns), rows=[dict(r) for r in rows])
    return dataset
