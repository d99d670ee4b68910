"""A team's "Built-in (local API)" connection: added by an owner or admin in one click, with a key of the team's
own (not the operator's, not the owner's Local key), used by members like any team connection, usage filed."""

import pytest
from django.conf import settings
from django.urls import reverse

from playground.chat.models import Conversation, Message
from playground.connections.models import Connection, ensure_local_connection
from playground.teams.models import UsageRecord
from tests.chat.conftest import connect, finish, receive_until_final
from tests.teams.conftest import client_for

pytestmark = [pytest.mark.needs_local_api]

HX = {"HX-Request": "true"}


@pytest.mark.django_db
def test_an_owner_adds_it_in_one_click_with_a_key_of_the_teams_own(team, alice, bob, charlie):
    own_local = ensure_local_connection(alice)
    response = client_for(alice).post(reverse("teams:add_local_connection", args=[team.pk]))
    assert response.status_code == 302
    connection = Connection.objects.get(team=team)
    assert connection.is_local and connection.name == "Built-in (local API)" and connection.owner == alice
    key = connection.get_key()
    assert key not in settings.LOCAL_API_KEYS and key != own_local.get_key()
    # alice's own Local connection is still the one her pages ensure.
    assert ensure_local_connection(alice) == own_local
    # A second click adds no second one; a member and an outsider cannot add it.
    client_for(alice).post(reverse("teams:add_local_connection", args=[team.pk]))
    assert client_for(bob).post(reverse("teams:add_local_connection", args=[team.pk])).status_code == 404
    assert client_for(charlie).post(reverse("teams:add_local_connection", args=[team.pk])).status_code == 404
    assert Connection.objects.filter(team=team).count() == 1
    # bob may use it, charlie may not; nobody edits its address or key.
    assert connection in Connection.objects.for_user(bob)
    assert connection not in Connection.objects.for_user(charlie)
    edit = reverse("teams:edit_connection", args=[team.pk, connection.pk])
    assert client_for(alice).get(edit).status_code == 400
    page = client_for(alice).get(reverse("teams:detail", args=[team.pk])).content.decode()
    assert "Add the built-in connection" not in page and key not in page


@pytest.mark.django_db(transaction=True)
async def test_a_member_chats_on_it_and_the_usage_is_filed(live_server, team, alice, bob, async_client):
    await async_client.aforce_login(alice)
    response = await async_client.post(reverse("teams:add_local_connection", args=[team.pk]))
    assert response.status_code == 302
    connection = await Connection.objects.aget(team=team)
    conversation = await Conversation.objects.acreate(owner=bob, connection=connection, model_id="local/chat")
    await async_client.aforce_login(bob)
    ws = await connect(conversation.pk, bob)
    sent = await async_client.post(
        reverse("chat:send", args=[conversation.pk]), {"content": "write 20 words about tea"}, headers=HX
    )
    assert sent.status_code == 200
    assistant = await Message.objects.aget(conversation=conversation, role="assistant")
    await receive_until_final(ws, assistant.pk)
    await ws.disconnect()
    message = await finish(assistant.pk)
    assert message.status == "complete" and message.content
    row = await UsageRecord.objects.aget(team=team, user=bob)
    assert row.connection_id == connection.pk and row.completion_tokens == message.completion_tokens
