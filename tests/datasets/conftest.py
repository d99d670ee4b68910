"""The cast of the dataset tests: alice owns datasets, bob is on her team (a member), carol is in no team of hers."""

import pytest
from django.test import Client

from playground.datasets import services
from playground.teams.models import MEMBER, OWNER, Membership, Team
from tests.conftest import PASSWORD

ROWS = [
    {"values": {"question": "2+2?"}, "expected": "4"},
    {"values": {"question": "Capital of France?"}, "expected": "Paris"},
]


def make_dataset(owner, name="Arithmetic", team=None, rows=ROWS, columns=("question",)):
    dataset, _ = services.create(user=owner, team=team, name=name, columns=list(columns), rows=[dict(r) for r in rows])
    return dataset


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def carol(django_user_model):
    return django_user_model.objects.create_user("carol", "carol@example.com", PASSWORD)


@pytest.fixture
def team(alice, bob):
    team = Team.objects.create(name="Acme")
    Membership.objects.create(team=team, user=alice, role=OWNER)
    Membership.objects.create(team=team, user=bob, role=MEMBER)
    return team
