"""A conversation whose team connection is revoked, deleted, or deleted with its team says so in words and asks
for another connection; nothing is sent, and it never falls back to another provider on its own."""

import pytest
from django.urls import reverse

from playground.chat.models import ConnectionLoss, Conversation, Message
from playground.connections.models import Connection
from tests.teams.conftest import client_for

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true"}


@pytest.fixture
def conversation(bob, team_connection):
    return Conversation.objects.create(owner=bob, title="Team talk", connection=team_connection, model_id="local/chat")


def page(user, conversation) -> str:
    response = client_for(user).get(reverse("chat:conversation", args=[conversation.pk]))
    assert response.status_code == 200
    return response.content.decode()


def send(user, conversation):
    return client_for(user).post(reverse("chat:send", args=[conversation.pk]), {"content": "hello"}, headers=HX)


def assert_nothing_sent(user, conversation, words):
    response = send(user, conversation)
    assert words in response.content.decode()
    assert not Message.objects.filter(conversation=conversation).exists()


def test_a_healthy_team_conversation_has_no_notice(bob, conversation):
    assert 'id="connection-notice"' not in page(bob, conversation)


def test_a_revoked_team_connection_is_named_and_another_is_asked_for(alice, bob, team, team_connection, conversation):
    client_for(alice).post(reverse("teams:revoke_connection", args=[team.pk, team_connection.pk]))
    html = page(bob, conversation)
    assert 'id="connection-notice"' in html
    assert "The team connection “Team gateway” of Research was revoked" in html and "Pick another connection" in html
    assert 'id="settings-form"' not in html  # no panel that would save another connection unasked
    assert_nothing_sent(bob, conversation, "was revoked")
    conversation.refresh_from_db()
    assert conversation.connection_id == team_connection.pk


def test_deleting_the_team_connection_is_said_and_nothing_falls_back(alice, bob, team, team_connection, conversation):
    client_for(alice).post(reverse("teams:revoke_connection", args=[team.pk, team_connection.pk]))
    client_for(alice).post(reverse("teams:delete_connection", args=[team.pk, team_connection.pk]))
    conversation.refresh_from_db()
    assert conversation.connection_id is None
    html = page(bob, conversation)
    assert "The team connection “Team gateway” of Research was removed" in html
    assert_nothing_sent(bob, conversation, "was removed")
    # Picking another connection in the notice ends it, and the conversation is usable again.
    mine = Connection.objects.create(owner=bob, name="Bob's own", base_url="https://api.example.com/v1")
    response = client_for(bob).post(reverse("chat:settings", args=[conversation.pk]), {"connection": mine.pk})
    assert response.status_code == 302
    conversation.refresh_from_db()
    assert conversation.connection == mine and 'id="connection-notice"' not in page(bob, conversation)


def test_deleting_the_team_is_said_on_every_members_conversation(alice, bob, team, team_connection, conversation):
    own = Conversation.objects.create(owner=alice, title="Alice's", connection=team_connection)
    response = client_for(alice).post(reverse("teams:delete", args=[team.pk]))
    assert response.status_code == 302
    assert ConnectionLoss.objects.count() == 2
    for user, item in ((bob, conversation), (alice, own)):
        html = page(user, item)
        assert "The team Research was deleted, and with it its connection “Team gateway”" in html
    assert_nothing_sent(bob, conversation, "was deleted")


def test_a_removed_member_is_told_on_the_conversation(alice, bob, team, conversation):
    membership = team.memberships.get(user=bob)
    client_for(alice).post(reverse("teams:remove_member", args=[team.pk, membership.pk]))
    assert "You are no longer a member of Research" in page(bob, conversation)


def test_deleting_ones_own_connection_clears_an_old_notice(alice, bob, team, team_connection, conversation):
    ConnectionLoss.objects.create(conversation=conversation, connection_name="Old", team_name="Research")
    mine = Connection.objects.create(owner=bob, name="Bob's own", base_url="https://api.example.com/v1")
    Conversation.objects.filter(pk=conversation.pk).update(connection=mine)
    mine.delete()
    assert not ConnectionLoss.objects.exists()
