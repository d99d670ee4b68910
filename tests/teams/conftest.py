"""The cast of the team tests: alice owns the team, bob is a member, charlie is in no team and must see nothing."""

import pytest
from django.utils import timezone

from playground.connections.models import Connection
from playground.teams.models import MEMBER, OWNER, Invite, Membership, Team
from tests.conftest import PASSWORD

TEAM_KEY = "sk-team-secret-9f8e7d6c5b4a39281706"
KEY_MIDDLE = TEAM_KEY[3:-4]  # the part the masked hint never shows


@pytest.fixture
def charlie(django_user_model):
    return django_user_model.objects.create_user("charlie", "charlie@example.com", PASSWORD)


@pytest.fixture
def team(alice, bob, catalog):
    team = Team.objects.create(name="Research")
    Membership.objects.create(team=team, user=alice, role=OWNER)
    Membership.objects.create(team=team, user=bob, role=MEMBER)
    return team


def make_team_connection(team, owner, *, base_url="https://api.example.com/v1", key=TEAM_KEY, name="Team gateway"):
    connection = Connection(owner=owner, team=team, name=name, base_url=base_url)
    connection.set_key(key)
    connection.save()
    return connection


@pytest.fixture
def team_connection(team, alice):
    return make_team_connection(team, alice)


@pytest.fixture
def invite(team, alice):
    return Invite.objects.create(team=team, created_by=alice, expires=timezone.now() + timezone.timedelta(days=1))


def client_for(user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client
