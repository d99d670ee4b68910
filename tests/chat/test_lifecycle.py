"""A generation ends on every path with its row final, whatever the channel layer does."""

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from playground.chat import services
from playground.chat.models import Message
from playground.chat.relay import fanout, outbox
from playground.chat.relay.control import generation_group
from playground.chat.relay.generation import LIVE_LOST_NOTICE, running
from tests.chat.conftest import connect, finish, receive_until_final
from tests.waiting import until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


async def test_a_failing_channel_layer_costs_the_live_view_not_the_answer(
    live_server, alice, make_conversation, monkeypatch
):
    # A socket that stands for one of another process: the turn's events go to it through the channel layer.
    monkeypatch.setattr(fanout, "ENABLED", False)
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    layer = get_channel_layer()

    async def broken(*args, **kwargs):
        raise ConnectionError("Redis went away")

    def down(*args, **kwargs):
        raise ConnectionError("Redis went away")

    monkeypatch.setattr(layer, "group_send", broken)
    monkeypatch.setattr(layer, "send", broken)
    monkeypatch.setattr(layer, "connection", down, raising=False)  # Redis: the members, the inlets' inboxes
    turn = await services.send(conversation, "write 100 words about rivers")
    generation = turn.generation
    message = await finish(turn.assistant.pk)
    monkeypatch.undo()  # Redis is back for the socket's goodbye
    await ws.disconnect()

    assert message.status == "complete" and len(message.content.split()) >= 90
    assert message.usage["completion_tokens"] > 0
    assert generation.live_lost
    assert running(turn.assistant.pk) is None


async def test_done_is_announced_after_the_row_is_final_with_a_notice_when_deltas_were_lost(
    live_server, alice, make_conversation, monkeypatch
):
    # The socket stands for one of another process: deltas reach it through the channel layer only.
    monkeypatch.setattr(fanout, "ENABLED", False)
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    real_send = outbox.Outbox._send
    seen = {}

    async def flaky(self, channel, events):
        # A frame of the outbox (relay/outbox.py): the first with a delta is lost.
        if "chat.delta" in {event["type"] for event in events} and not seen.get("failed"):
            seen["failed"] = True
            raise ConnectionError("one publish lost")
        for event in events:
            if event["type"] == "chat.done":
                seen["status"] = (await Message.objects.aget(pk=event["message_id"])).status
        await real_send(self, channel, events)

    monkeypatch.setattr(outbox.Outbox, "_send", flaky)
    turn = await services.send(conversation, "write 60 words about lakes")
    events = await receive_until_final(ws, turn.assistant.pk)
    await ws.disconnect()

    assert seen["status"] == "complete"
    assert events[-1]["type"] == "done" and events[-1]["notice"] == LIVE_LOST_NOTICE


async def test_a_stopped_generation_releases_its_channel_and_its_registry_entry(live_server, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    turn = await services.send(conversation, "write 3000 words about the sea")
    generation = turn.generation
    await until(lambda: generation.seq >= 5, timeout=30, what="five deltas")
    await services.request_stop(turn.assistant.pk)
    message = await finish(turn.assistant.pk)
    assert message.status == "stopped" and message.content
    assert running(turn.assistant.pk) is None
    assert generation.work.done()
    groups = getattr(get_channel_layer(), "groups", None)  # the in-memory layer shows its groups
    if groups is not None:
        assert not groups.get(generation_group(turn.assistant.pk))
