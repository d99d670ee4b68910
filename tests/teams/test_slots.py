"""Per-connection concurrency: a connection's slots are shared by everyone using it (a team's leases in the
database, a personal connection's in slots.py: this process, or Redis for every process); a request that finds
them all taken waits and says "waiting for a free slot (n of m in use)" rather than failing; a stuck lease stops
counting once its heartbeat is stale."""

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from playground.catalog.services import refresh_models
from playground.chat.models import Conversation, Message
from playground.connections import gate
from playground.connections.models import Connection, Lease
from tests.chat.conftest import connect, finish
from tests.fakeprovider import server as fake
from tests.teams.conftest import make_team_connection

pytestmark = pytest.mark.django_db(transaction=True)


def fake_connection(user, fake_openai, slots: int) -> Connection:
    connection = Connection(owner=user, name="Fake", base_url=fake_openai.base_url, concurrency=slots)
    connection.set_key(fake_openai.key)
    connection.save()
    return connection


async def test_a_send_waits_for_a_free_slot_and_says_so(live_server, alice, fake_openai):
    connection = await sync_to_async(fake_connection)(alice, fake_openai, 1)
    conversation = await Conversation.objects.acreate(owner=alice, connection=connection, model_id=fake.CHAT_MODEL)
    held = await gate.aopen(connection, alice, "chat")
    ws = await connect(conversation.pk, alice)
    await ws.send_json_to({"action": "send", "id": "s1", "content": "Name a river."})
    frames = []
    while not any(f.get("type") == "waiting" for f in frames):
        frames.append(await ws.receive_json_from(timeout=10))
    assert next(f for f in frames if f["type"] == "sent")
    waiting = next(f for f in frames if f["type"] == "waiting")
    assert waiting["text"] == "Waiting for a free slot (1 of 1 in use)"
    assert fake_openai.state.bodies("/chat/completions") == []
    await held.arelease()
    answer = await finish(waiting["message_id"])
    await ws.disconnect()
    assert answer.status == Message.COMPLETE and answer.content
    assert len(fake_openai.state.bodies("/chat/completions")) == 1
    assert await Lease.objects.acount() == 0


async def test_a_comparison_waits_for_a_free_slot_like_a_send(live_server, alice, fake_openai):
    """One turn builder: a column that finds every slot taken waits for one and says so (it is not refused)."""
    connection = await sync_to_async(fake_connection)(alice, fake_openai, 1)
    message, ok = await refresh_models(connection, alice)  # the columns' models are the connection's
    assert ok, message
    conversation = await Conversation.objects.acreate(owner=alice, connection=connection, model_id=fake.CHAT_MODEL)
    held = await gate.aopen(connection, alice, "chat")
    ws = await connect(conversation.pk, alice)
    columns = {"model_1": fake.CHAT_MODEL, "model_2": fake.TOOLS_MODEL}
    await ws.send_json_to({"action": "compare", "id": "c1", "content": "Name a bay.", **columns})
    frames = []
    while sum(f.get("type") == "waiting" for f in frames) < 2:
        try:
            frames.append(await ws.receive_json_from(timeout=10))
        except TimeoutError:
            raise AssertionError(frames) from None
    assert {f["text"] for f in frames if f["type"] == "waiting"} == {"Waiting for a free slot (1 of 1 in use)"}
    assert fake_openai.state.bodies("/chat/completions") == []
    await held.arelease()
    answers = [await finish(f["message_id"]) for f in frames if f["type"] == "waiting"]
    await ws.disconnect()
    assert [a.status for a in answers] == [Message.COMPLETE, Message.COMPLETE]
    assert len(fake_openai.state.bodies("/chat/completions")) == 2
    assert await Lease.objects.acount() == 0


async def test_a_request_waits_for_a_slot_that_frees_and_is_told_the_numbers(live_server, alice, fake_openai):
    connection = await sync_to_async(fake_connection)(alice, fake_openai, 2)
    first, second = await gate.aopen(connection, alice, "chat"), await gate.aopen(connection, alice, "chat")
    told = []

    async def on_wait(in_use, limit):
        told.append((in_use, limit))
        if len(told) == 3:
            await first.arelease()

    third = await gate.aopen(connection, alice, "chat", wait=True, on_wait=on_wait)
    assert told[0] == (2, 2) and third.endpoint.api_key == fake_openai.key
    with pytest.raises(gate.Refused) as busy:
        await gate.aopen(connection, alice, "chat")
    assert "All 2 request slots of the connection “Fake” are in use (2 of 2)" in busy.value.message
    for ticket in (second, third):
        await ticket.arelease()


async def test_a_stuck_lease_stops_counting_with_its_heartbeat(live_server, alice, team, fake_openai, settings):
    connection = await sync_to_async(make_team_connection)(team, alice, base_url=fake_openai.base_url)
    connection.concurrency = 1
    await connection.asave()
    stuck = await gate.aopen(connection, alice, "chat")
    stale = timezone.now() - timedelta(seconds=settings.BACKGROUND_STALE_SECONDS + 1)
    await Lease.objects.filter(pk=stuck.lease_id).aupdate(heartbeat=stale)
    fresh = await gate.aopen(connection, alice, "chat")  # the dead process's slot no longer counts
    assert await sync_to_async(gate.sweep)(timezone.now() - timedelta(seconds=5), [fresh.lease_id]) == 1
    await fresh.arelease()
    await asyncio.sleep(0)


async def test_the_first_message_of_a_new_chat_waits_for_a_slot_too(live_server, alice, fake_openai, async_client):
    from django.urls import reverse

    connection = await sync_to_async(fake_connection)(alice, fake_openai, 1)
    held = await gate.aopen(connection, alice, "chat")
    await async_client.aforce_login(alice)
    data = {"content": "Name a river.", "connection": connection.pk, "model": fake.CHAT_MODEL}
    response = await async_client.post(reverse("chat:create"), data, headers={"HX-Request": "true"})
    assert response.status_code == 200 and "HX-Redirect" in response.headers
    answer = await Message.objects.aget(conversation__owner=alice, role="assistant")
    assert answer.status == Message.STREAMING and fake_openai.state.bodies("/chat/completions") == []
    await held.arelease()
    answer = await finish(answer.pk)
    assert answer.status == Message.COMPLETE and len(fake_openai.state.bodies("/chat/completions")) == 1
