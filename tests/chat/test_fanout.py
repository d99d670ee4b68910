"""A process takes each event of a conversation from the channel layer once, whatever the number of its sockets that
follow it (relay/fanout.py: the process's inlet is the group's member, not each socket), and hands it to each of
them: every socket still gets every delta, once and in order. Runs on either layer (in memory, or Redis)."""

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from playground.chat.relay import fanout
from playground.chat.relay.publishing import conversation_group
from tests.chat.conftest import connect, receive_until_final

pytestmark = pytest.mark.django_db(transaction=True)

MESSAGE = 987_654  # a turn of another process: the sockets render its events without reading the database


async def members(layer, group: str) -> list[str]:
    """The channels in the layer's group (Redis: its sorted set)."""
    if isinstance(getattr(layer, "groups", None), dict):
        return list(layer.groups.get(group, {}))
    found = await layer.connection(layer.consistent_hash(group)).zrange(layer._group_key(group), 0, -1)
    return [member.decode() for member in found]


def from_another_process(group: str, count: int) -> list[dict]:
    """What another process's generation sends through the layer for a turn of `count` deltas (fanout.publish)."""
    stamp = {"group": group, "process": "another-process"}
    deltas = [
        {"type": "chat.delta", "message_id": MESSAGE, "seq": seq, "after": seq - 1, "blocks": [], "tail": ""}
        | {"reasoning": "", "text": f"word{seq} ", **stamp}
        for seq in range(1, count + 1)
    ]
    start = {"type": "chat.start", "message_id": MESSAGE, "html": "<article></article>", **stamp}
    done = {"type": "chat.done", "message_id": MESSAGE, "seq": count, "status": "complete", "html": "<p></p>", **stamp}
    return [start, *deltas, done]


@pytest.fixture
def arrivals(monkeypatch):
    """The events the process's inlet took from the layer."""
    taken = []
    deliver = fanout.Inlet.deliver

    def counted(self, message):
        taken.append(message["type"])
        deliver(self, message)

    monkeypatch.setattr(fanout.Inlet, "deliver", counted)
    return taken


async def test_three_sockets_on_a_conversation_take_one_copy_of_each_event_and_each_gets_every_delta_once(
    alice, make_conversation, arrivals
):
    conversation = await sync_to_async(make_conversation)()
    group, layer = conversation_group(conversation.pk), get_channel_layer()
    tabs = [await connect(conversation.pk, alice) for _ in range(3)]
    inlet = fanout.inlet(layer)
    assert await members(layer, group) == [inlet.channel]  # one member for the process, none per socket

    events = from_another_process(group, 20)
    for event in events:
        await layer.group_send(group, event)
    seen = [await receive_until_final(tab, MESSAGE) for tab in tabs]
    for tab in tabs:
        await tab.disconnect()

    assert arrivals == [event["type"] for event in events]  # one copy of each event for the three sockets
    words = "".join(f"word{seq} " for seq in range(1, 21))
    for got in seen:
        assert [event["type"] for event in got] == ["start", *["delta"] * 20, "done"]
        assert "".join(event["text"] for event in got if event["type"] == "delta") == words
        assert not {"group", "process"} & set(got[1])  # the layer's stamps stay in the process
    assert await members(layer, group) == []  # left with its last socket


async def test_a_process_that_the_layer_forgot_joins_the_group_again(alice, make_conversation, arrivals):
    # A restarted Redis has no groups (and a membership older than the layer's group_expiry is dropped): the next
    # follow adds the process again, and so does the inlet's periodic renewal.
    conversation = await sync_to_async(make_conversation)()
    group, layer = conversation_group(conversation.pk), get_channel_layer()
    first = await connect(conversation.pk, alice)
    inlet = fanout.inlet(layer)
    await layer.group_discard(group, inlet.channel)
    second = await connect(conversation.pk, alice)
    assert await members(layer, group) == [inlet.channel]

    await layer.group_discard(group, inlet.channel)
    await inlet._rejoin()
    assert await members(layer, group) == [inlet.channel]
    events = from_another_process(group, 3)
    for event in events:
        await layer.group_send(group, event)
    for tab in (first, second):
        got = await receive_until_final(tab, MESSAGE)
        assert "".join(event.get("text", "") for event in got) == "word1 word2 word3 "
        await tab.disconnect()
    assert arrivals == [event["type"] for event in events]


async def test_an_inlet_whose_receive_failed_joins_its_groups_again_and_hands_on(
    alice, make_conversation, arrivals, monkeypatch
):
    # Redis went away and came back empty: the inlet's receive raised; it adds itself to its groups again before it
    # listens on, so the tabs of this process follow the conversation's next turn.
    monkeypatch.setattr(fanout, "RETRY", 0.01)
    conversation = await sync_to_async(make_conversation)()
    group, layer = conversation_group(conversation.pk), get_channel_layer()
    tab = await connect(conversation.pk, alice)
    inlet = fanout.inlet(layer)
    receive, failures = layer.receive, []

    async def failing_once(channel):
        if not failures:
            failures.append(channel)
            raise ConnectionError("Redis restarted")
        return await receive(channel)

    monkeypatch.setattr(layer, "receive", failing_once)
    await layer.group_discard(group, inlet.channel)  # what the restarted Redis forgot
    # The receive under way takes this; the next one fails.
    await layer.send(inlet.channel, {"type": "chat.thread", "origin": "", "group": group})
    assert (await tab.receive_json_from(timeout=10))["type"] == "thread"
    for _ in range(200):
        if failures and await members(layer, group) == [inlet.channel]:
            break
        await asyncio.sleep(0.05)
    assert failures == [inlet.channel] and await members(layer, group) == [inlet.channel]

    events = from_another_process(group, 3)
    for event in events:
        await layer.group_send(group, event)
    got = await receive_until_final(tab, MESSAGE)
    await tab.disconnect()
    assert "".join(event.get("text", "") for event in got) == "word1 word2 word3 "
    assert arrivals == ["chat.thread", *(event["type"] for event in events)]
