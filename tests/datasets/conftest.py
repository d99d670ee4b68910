"""The cast of the dataset tests: alice owns datasets, bob is on her team (a member), carol is in no team of hers."""

import pytest

from playground.datasets import services
from playground.teams.models import MEMBER, OWNER, Membership, Team

ROWS = [
    {"values": {"question": "2+2?"}, "expected": "4"},
    {"values": {"question": "Capital of France?"}, "expected": "Paris"},
]


def make_dataset(owner, name="Arithmetic", team=None, rows=ROWS, columns=("question",)):
    dataset, _ = services.create(user=owner, team=team, name=name, columns=list(columns), rows=[dict(r) for r in rows])
    return dataset


@pytest.fixture
def team(alice, bob):
    team = Team.objects.create(name="Acme")
    Membership.objects.create(team=team, user=alice, role=OWNER)
    Membership.objects.create(team=team, user=bob, role=MEMBER)
    return team
