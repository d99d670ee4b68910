"""A stored key is bound to the host it was saved for: a changed Base URL (scheme, host or port) needs the key again,
for personal and team connections alike; only the team's owner replaces a team key; Test and Refresh never send a
stored key anywhere else (zero requests at the new host); the team's audit log says who changed what."""

import pytest
from django.urls import reverse

from playground.connections.models import Connection
from playground.teams.models import ADMIN, Membership
from tests.teams.conftest import TEAM_KEY, client_for, make_team_connection

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def any_public_host(monkeypatch):
    monkeypatch.setattr("playground.connections.forms.check_url_sync", lambda url: None)


def edit(client, url, connection, **data):
    fields = {"name": connection.name, "base_url": connection.base_url, "api_key": "", **data}
    return client.post(url, fields)


def test_a_personal_connection_moved_to_another_host_needs_its_key_again(alice):
    connection = Connection(owner=alice, name="Mine", base_url="https://api.example.com/v1")
    connection.set_key("sk-personal-aaaabbbbccccdddd")
    connection.save()
    url, client = reverse("connections:edit", args=[connection.pk]), client_for(alice)
    for moved in ("https://evil.example.net/v1", "http://api.example.com/v1", "https://api.example.com:8443/v1"):
        page = edit(client, url, connection, base_url=moved).content.decode()
        assert "api_key: the Base URL now points at" in page and "enter the key again" in page
        assert Connection.objects.get(pk=connection.pk).base_url == "https://api.example.com/v1"
    # The same host (another path, the default port written out) keeps the key.
    assert edit(client, url, connection, base_url="https://API.example.com:443/v1").status_code == 302
    assert edit(client, url, connection, base_url="https://evil.example.net/v1", api_key="sk-new-key-0000111122223333")
    saved = Connection.objects.get(pk=connection.pk)
    assert saved.key_origin == "https://evil.example.net:443" and saved.get_key() == "sk-new-key-0000111122223333"


def test_only_the_owner_replaces_a_team_key_and_an_admin_cannot_move_it(team, alice, bob):
    connection = make_team_connection(team, alice)
    Membership.objects.filter(team=team, user=bob).update(role=ADMIN)
    url = reverse("teams:edit_connection", args=[team.pk, connection.pk])
    admin = client_for(bob)
    page = edit(admin, url, connection, base_url="https://evil.example.net/v1").content.decode()
    assert "enter the key again" in page
    page = edit(admin, url, connection, base_url="https://evil.example.net/v1", api_key="sk-admin-0000111122223333")
    assert "only the owner of Research may replace the team&#x27;s key" in page.content.decode()
    assert Connection.objects.get(pk=connection.pk).get_key() == TEAM_KEY
    assert edit(admin, url, connection, name="Renamed").status_code == 302  # the rest an admin may edit
    owner = client_for(alice)
    moved = edit(owner, url, connection, name="Renamed", base_url="https://new.example.com/v1", api_key="sk-o-12345678")
    assert moved.status_code == 302
    actions = list(team.audit.order_by("pk").values_list("action", "actor__username"))
    assert ("key_changed", "alice") in actions and ("url_changed", "alice") in actions
    assert "to https://new.example.com/v1" in team.audit.get(action="url_changed").detail


@pytest.mark.parametrize("route", ["connections:test", "catalog:refresh"])
def test_test_and_refresh_never_send_a_stored_key_to_a_host_it_was_not_saved_for(
    route, live_server, team, alice, fake_openai
):
    connection = make_team_connection(team, alice, base_url="https://api.example.com/v1", key=fake_openai.key)
    # Moved without the form (an old row, a direct edit): the gate still refuses the new host.
    Connection.objects.filter(pk=connection.pk).update(base_url=fake_openai.base_url)
    client_for(alice).post(reverse(route, args=[connection.pk]))
    assert fake_openai.state.requests == []
    saved = Connection.objects.get(pk=connection.pk)
    if route == "connections:test":
        assert "was saved for https://api.example.com:443" in saved.last_test_message
