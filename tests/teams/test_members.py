"""Creating a team, invite links (expiry, single and multi use), roles, removal, leaving, transfer, deletion."""

import pytest
from django.urls import reverse
from django.utils import timezone

from playground.connections.models import Connection
from playground.teams.models import Invite, Membership, Team
from tests.teams.conftest import TEAM_KEY, client_for

pytestmark = pytest.mark.django_db


def actions(team):
    return list(team.audit.order_by("pk").values_list("action", flat=True))


def test_creating_a_team_makes_its_creator_the_owner(alice_client, alice):
    response = alice_client.post(reverse("teams:index"), {"name": "  Lab  "})
    team = Team.objects.get()
    assert response.url == reverse("teams:detail", args=[team.pk])
    assert team.name == "Lab" and Membership.objects.get(team=team).role == "owner" and team.owner == alice
    assert "name: give the team a name" in alice_client.post(reverse("teams:index"), {"name": " "}).content.decode()


def test_a_single_use_invite_lets_one_person_join(alice, charlie, team, django_user_model):
    client = client_for(alice)
    client.post(reverse("teams:invite", args=[team.pk]), {"expiry": "1d", "uses": "single"})
    invite = Invite.objects.get()
    assert invite.max_uses == 1 and invite.token in client.get(reverse("teams:detail", args=[team.pk])).content.decode()
    url = reverse("teams:join", args=[invite.token])
    assert "Join the team" in client_for(charlie).get(url).content.decode()
    assert client_for(charlie).post(url).url == reverse("teams:detail", args=[team.pk])
    assert Membership.objects.get(team=team, user=charlie).role == "member"
    dave = django_user_model.objects.create_user("dave", "d@example.com", "pw-dave-123456")
    response = client_for(dave).post(url)
    assert response.status_code == 410 and "already used" in response.content.decode()
    assert not Membership.objects.filter(user=dave).exists()
    assert actions(team) == ["invited", "joined"]


def test_a_multi_use_invite_works_until_it_expires_or_is_revoked(alice, charlie, team, django_user_model):
    invite = Invite.objects.create(team=team, created_by=alice, expires=timezone.now() + timezone.timedelta(hours=1))
    dave = django_user_model.objects.create_user("dave", "d@example.com", "pw-dave-123456")
    eve = django_user_model.objects.create_user("eve", "e@example.com", "pw-eve-1234567")
    url = reverse("teams:join", args=[invite.token])
    client_for(charlie).post(url)
    client_for(dave).post(url)
    assert team.memberships.count() == 4
    Invite.objects.filter(pk=invite.pk).update(expires=timezone.now() - timezone.timedelta(seconds=1))
    response = client_for(eve).post(url)
    assert response.status_code == 410 and "has expired" in response.content.decode()
    Invite.objects.filter(pk=invite.pk).update(expires=timezone.now() + timezone.timedelta(hours=1))
    client_for(alice).post(reverse("teams:revoke_invite", args=[team.pk, invite.pk]))
    assert "was revoked" in client_for(eve).post(url).content.decode()
    assert client_for(eve).get(reverse("teams:join", args=["x" * 32])).status_code == 404


def test_roles_removal_and_who_may_do_what(alice, bob, charlie, team):
    carol = Membership.objects.create(team=team, user=charlie, role="member")
    bob_membership = Membership.objects.get(team=team, user=bob)
    owner = client_for(alice)
    owner.post(reverse("teams:set_role", args=[team.pk, bob_membership.pk]), {"role": "admin"})
    bob_membership.refresh_from_db()
    assert bob_membership.role == "admin"
    admin = client_for(bob)
    alice_membership = Membership.objects.get(team=team, user=alice)
    # An admin can neither remove nor demote the owner, nor promote anyone.
    assert admin.post(reverse("teams:remove_member", args=[team.pk, alice_membership.pk])).status_code == 403
    assert admin.post(reverse("teams:set_role", args=[team.pk, carol.pk]), {"role": "admin"}).status_code == 403
    # An admin removes a member; the member's next request is refused (see test_requests).
    admin.post(reverse("teams:remove_member", args=[team.pk, carol.pk]))
    assert not Membership.objects.filter(pk=carol.pk).exists()
    assert client_for(charlie).get(reverse("teams:detail", args=[team.pk])).status_code == 404
    assert actions(team) == ["role", "removed"]


def test_budget_is_validated_naming_the_field_and_the_limit(alice, bob, team):
    membership = Membership.objects.get(team=team, user=bob)
    client = client_for(alice)
    response = client.post(
        reverse("teams:set_budget", args=[team.pk, membership.pk]), {"monthly_token_budget": "-5"}, follow=True
    )
    assert "monthly_token_budget: must be at least 0 tokens." in response.content.decode()
    client.post(reverse("teams:set_budget", args=[team.pk, membership.pk]), {"monthly_token_budget": "500"})
    membership.refresh_from_db()
    assert membership.monthly_token_budget == 500
    client.post(reverse("teams:set_budget", args=[team.pk, membership.pk]), {"monthly_token_budget": ""})
    membership.refresh_from_db()
    assert membership.monthly_token_budget is None


def test_leave_transfer_and_delete(alice, bob, team, team_connection):
    owner = client_for(alice)
    response = owner.post(reverse("teams:leave", args=[team.pk]), follow=True)
    assert "The owner cannot leave" in response.content.decode()
    bob_membership = Membership.objects.get(team=team, user=bob)
    owner.post(reverse("teams:transfer", args=[team.pk]), {"member": bob_membership.pk})
    assert team.owner == bob and Membership.objects.get(team=team, user=alice).role == "admin"
    # Now alice may leave; only the new owner deletes.
    owner.post(reverse("teams:leave", args=[team.pk]))
    assert not Membership.objects.filter(team=team, user=alice).exists()
    assert client_for(bob).post(reverse("teams:delete", args=[team.pk])).status_code == 302
    assert not Team.objects.exists() and not Connection.objects.filter(pk=team_connection.pk).exists()


def test_team_connections_are_added_edited_and_revoked_by_managers_with_an_audit_trail(alice, bob, team, monkeypatch):
    async def no_refresh(connection, user):
        return "0 models listed.", True

    monkeypatch.setattr("playground.teams.views.refresh_models", no_refresh)
    monkeypatch.setattr("playground.connections.forms.check_url_sync", lambda url: None)
    client = client_for(alice)
    data = {"name": "Shared", "base_url": "https://api.example.com/v1", "api_key": TEAM_KEY}
    response = client.post(reverse("teams:add_connection", args=[team.pk]), data)
    assert response.status_code == 302
    connection = Connection.objects.get(team=team)
    assert connection.owner == alice and connection.get_key() == TEAM_KEY
    data["api_key"] = "sk-rotated-key-aaaabbbbccccdddd"
    client.post(reverse("teams:edit_connection", args=[team.pk, connection.pk]), data)
    connection.refresh_from_db()
    assert connection.get_key() == "sk-rotated-key-aaaabbbbccccdddd"
    client.post(reverse("teams:revoke_connection", args=[team.pk, connection.pk]))
    assert Connection.objects.get(pk=connection.pk).revoked
    assert actions(team) == ["connection_added", "key_changed", "connection_revoked"]
    assert team.audit.get(action="key_changed").actor == alice
    log = client.get(reverse("teams:audit", args=[team.pk])).content.decode()
    assert "Key of “Shared” replaced" in log and TEAM_KEY not in log


def test_an_invite_link_sends_a_signed_out_visitor_to_log_in_first(client, invite):
    url = reverse("teams:join", args=[invite.token])
    response = client.get(url)
    assert response.status_code == 302 and response.url.startswith(reverse("accounts:login"))
    assert "next=" in response.url and invite.team.name not in client.get(response.url).content.decode()
