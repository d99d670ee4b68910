"""A forked batch is submitted again: its requests as a new batch on the forker's connection (the local API over
HTTP). The fake provider has no batches endpoint, so this runs against the local API only."""

import html
import re

import httpx
import pytest

from playground.batches.models import Batch
from playground.connections.models import Connection, add_team_local_connection
from playground.teams.models import OWNER, Membership, Team
from tests.batches.conftest import local_connection, wait_for_status

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

BODIES = [
    {"model": "local/chat", "messages": [{"role": "user", "content": "Name a colour of the sky."}]},
    {"model": "local/chat", "messages": [{"role": "user", "content": "Say hello in French."}], "max_tokens": 20},
]


def fork_of(user, connection=None) -> Batch:
    return Batch.objects.create(
        owner=user,
        connection=connection or local_connection(user),
        remote_id="fork of batch_abc",
        input_filename="shared.jsonl",
        request_count=2,
        status="completed",
        request_counts={"total": 2, "completed": 2, "failed": 0},
        metadata={"team": "docs"},
        usage_recorded=True,
        copy={"requests": BODIES, "rows": []},
    )


def test_a_forked_batch_is_submitted_again_on_the_forkers_connection(alice_http, alice, live_server):
    fork = fork_of(alice)
    page = alice_http.get("/batches/").text
    assert f"/batches/{fork.pk}/resubmit/" in page and "Submit again" in page

    response = alice_http.post(
        f"/batches/{fork.pk}/resubmit/", data={"connection": fork.connection_id}, follow_redirects=True
    )
    assert response.status_code == 200
    again = Batch.objects.exclude(pk=fork.pk).get()
    assert again.owner == alice and again.connection_id == fork.connection_id and again.copy is None
    assert again.request_count == 2 and again.remote_id.startswith("batch_") and again.metadata == {"team": "docs"}
    assert f"Batch {again.remote_id} created with 2 requests." in response.text

    key = local_connection(alice).get_key()  # the file is Alice's key's own
    sent = httpx.get(
        f"{live_server.api_url}/files/{again.input_file_id}/content", headers={"Authorization": f"Bearer {key}"}
    ).text
    assert [line for line in sent.splitlines() if line] and all("local/chat" in line for line in sent.splitlines())
    assert '"max_tokens": 20' in sent and "Say hello in French." in sent
    assert 'data-status="completed"' in wait_for_status(alice_http, again.pk, ("completed",))


def test_only_a_fork_of_ones_own_is_submitted_again(alice_http, alice, bob):
    original = Batch.objects.create(owner=alice, connection=local_connection(alice), remote_id="batch_x")
    own = {"connection": local_connection(alice).pk}
    assert alice_http.post(f"/batches/{original.pk}/resubmit/", data=own).status_code == 404
    bobs = fork_of(bob)
    assert alice_http.post(f"/batches/{bobs.pk}/resubmit/", data=own).status_code == 404
    assert Batch.objects.count() == 2


def spent_team_connection(alice) -> Connection:
    """A team connection of alice's whose team budget is spent: the gate refuses every request through it."""
    team = Team.objects.create(name="Research", monthly_token_budget=0)
    Membership.objects.create(team=team, user=alice, role=OWNER)
    return add_team_local_connection(team, alice)


def selected(page: str, pk: int) -> int:
    select = re.search(rf'<select name="connection" id="resubmit-{pk}">(.*?)</select>', page, re.S)
    assert select, "no connection select beside Submit again"
    return int(re.search(r'<option value="(\d+)"[^>]*selected', select.group(1)).group(1))


def test_submit_again_offers_the_users_connections_starting_on_the_last_used(alice_http, alice, bob):
    team = spent_team_connection(alice)
    fork = fork_of(alice)  # on her own Local: her last batch
    page = alice_http.get("/batches/").text
    offered = re.findall(r'<option value="(\d+)"', page.split(f'id="resubmit-{fork.pk}"')[1].split("</select>")[0])
    assert sorted(map(int, offered)) == sorted(c.pk for c in Connection.objects.for_user(alice))
    assert selected(page, fork.pk) == local_connection(alice).pk
    Batch.objects.create(owner=alice, connection=team, remote_id="batch_team")  # used since: the team's
    assert selected(alice_http.get("/batches/").text, fork.pk) == team.pk
    bobs = local_connection(bob)  # another user's connection is never offered, and refused when posted
    response = alice_http.post(f"/batches/{fork.pk}/resubmit/", data={"connection": bobs.pk})
    assert f'value="{bobs.pk}"' not in response.text
    assert "connection: choose one of your connections." in html.unescape(response.text)
    assert Batch.objects.filter(owner=alice).count() == 2


def test_a_refused_submit_again_is_shown_in_its_row_and_goes_through_another_connection(alice_http, alice):
    team = spent_team_connection(alice)
    fork = fork_of(alice, team)  # forked onto the team connection: its row starts there
    assert selected(alice_http.get("/batches/").text, fork.pk) == team.pk

    refused = alice_http.post(f"/batches/{fork.pk}/resubmit/", data={"connection": team.pk})
    assert refused.status_code == 200
    row = html.unescape(refused.text.split(f'id="batch-{fork.pk}"')[1].split("Submit again")[0])
    assert "Not sent through the team connection" in row and "Choose another connection" in row
    assert selected(refused.text, fork.pk) == team.pk  # the one refused, so another can be chosen beside it
    assert Batch.objects.filter(owner=alice).count() == 1

    own = local_connection(alice)
    response = alice_http.post(f"/batches/{fork.pk}/resubmit/", data={"connection": own.pk}, follow_redirects=True)
    again = Batch.objects.exclude(pk=fork.pk).get()
    assert again.connection == own and again.request_count == 2 and again.copy is None
    assert f"Batch {again.remote_id} created with 2 requests." in response.text
