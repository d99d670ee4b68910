"""The gate's policy tables move from the teams app to connections with nothing lost, and back on a reverse: the
real migrations run on this database (SQLite or PostgreSQL, as the suite is configured). Only the state moves: the
tables keep their names, so every row, id and link stays as it was."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from playground.connections.models import Connection, Lease, Membership, Team, UsageRecord
from playground.sharing.models import Share
from playground.teams.models import AuditEvent, Invite

pytestmark = pytest.mark.django_db(transaction=True)
BEFORE = [
    ("connections", "0006_gate_leases_and_key_origin"),
    ("teams", "0005_usage_kind_is_any_purpose"),
    ("sharing", "0008_share_source_only"),
]


def _migrate(targets=None):
    executor = MigrationExecutor(connection)
    targets = targets or executor.loader.graph.leaf_nodes()
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def _old_rows(old, alice, bob) -> dict:
    from django.utils import timezone

    OldTeam = old.get_model("teams", "Team")
    team = OldTeam.objects.create(name="Research", monthly_token_budget=5000)
    old.get_model("teams", "Membership").objects.create(team=team, user_id=alice.pk, role="owner")
    old.get_model("teams", "Membership").objects.create(team=team, user_id=bob.pk, monthly_token_budget=700)
    link = old.get_model("connections", "Connection").objects.create(
        owner_id=alice.pk, team=team, name="Team gateway", base_url="https://api.example.com/v1"
    )
    # A heartbeat ahead: the background sweep of dead leases leaves it alone while the migrations run.
    later = timezone.now() + timezone.timedelta(days=1)
    old.get_model("connections", "Lease").objects.create(
        connection=link, user_id=bob.pk, team=team, purpose="chat", heartbeat=later
    )
    old.get_model("teams", "UsageRecord").objects.create(
        team=team, connection=link, user_id=bob.pk, username="bob", kind="summaries", prompt_tokens=12, status="ok"
    )
    old.get_model("teams", "Invite").objects.create(team=team, expires=timezone.now() + timezone.timedelta(days=1))
    old.get_model("teams", "AuditEvent").objects.create(team=team, action="invite", detail="made")
    kind = old.get_model("contenttypes", "ContentType").objects.get_or_create(app_label="chat", model="conversation")
    old.get_model("sharing", "Share").objects.create(
        owner_id=alice.pk,
        kind="conversation",
        title="Rivers",
        source_type=kind[0],
        source_id=1,
        visibility="team",
        team=team,
    )
    return {"team": team.pk, "connection": link.pk}


def _check_new(ids, alice, bob) -> None:
    team = Team.objects.get(pk=ids["team"])
    assert (team.name, team.monthly_token_budget, team.owner) == ("Research", 5000, alice)
    assert {(m.user, m.role, m.monthly_token_budget) for m in Membership.objects.filter(team=team)} == {
        (alice, "owner", None),
        (bob, "member", 700),
    }
    assert Connection.objects.get(pk=ids["connection"]).team == team
    assert Lease.objects.get().team == team
    row = UsageRecord.objects.get()
    assert (row.team, row.connection_id, row.user, row.kind, row.tokens) == (
        team,
        ids["connection"],
        bob,
        "summaries",
        12,
    )
    assert Invite.objects.get().team == team and AuditEvent.objects.get().team == team
    assert Share.objects.get().team == team
    assert list(team.usage.all()) == [row] and team.connections.count() == 1 and team.shares.count() == 1


def test_the_policy_tables_move_to_the_gate_with_nothing_lost_and_back(alice, bob):
    try:
        old = _migrate(BEFORE)
        ids = _old_rows(old, alice, bob)
        _migrate()
        _check_new(ids, alice, bob)
        back = _migrate(BEFORE)  # the reverse keeps every row too
        OldTeam = back.get_model("teams", "Team")
        assert OldTeam.objects.get(pk=ids["team"]).memberships.count() == 2
        assert back.get_model("teams", "UsageRecord").objects.get().team_id == ids["team"]
        assert back.get_model("sharing", "Share").objects.get().team_id == ids["team"]
    finally:
        _migrate()
    _check_new(ids, alice, bob)
