"""The events a process publishes for the other processes leave in frames (relay/outbox.py): within one frame, the
deltas of every conversation bound for one process are one message to its inlet, and each socket there still gets
every delta once and in order. Runs on either layer (in memory, or Redis). The publishing process is this one with
its in-memory hand-over off (fanout.ENABLED): its own inlet then stands for another process's."""

import asyncio
import itertools
import os
import threading
import time

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from playground.chat.relay import fanout, outbox
from playground.chat.relay.publishing import conversation_group
from tests.chat.conftest import connect, receive_until_final

pytestmark = pytest.mark.django_db(transaction=True)

FIRST = 987_000  # the turns of another process: the sockets render their events without reading the database
CONVERSATIONS, DELTAS = 5, 12


def turn(message_id: int, count: int) -> tuple[dict, list[dict], dict]:
    start = {"type": "chat.start", "message_id": message_id, "html": "<article></article>"}
    deltas = [
        {"type": "chat.delta", "message_id": message_id, "seq": seq, "after": seq - 1, "blocks": [], "tail": ""}
        | {"reasoning": "", "text": f"m{message_id}w{seq} "}
        for seq in range(1, count + 1)
    ]
    done = {"type": "chat.done", "message_id": message_id, "seq": count, "status": "complete", "html": "<p></p>"}
    return start, deltas, done


@pytest.fixture
def sent(monkeypatch):
    """What the outbox sent to each inlet: for each message (a frame), the types of the events it carried."""
    messages = []
    real = outbox.Outbox._send

    async def recording(self, channel, events):
        messages.append([event["type"] for event in events])
        await real(self, channel, events)

    monkeypatch.setattr(outbox.Outbox, "_send", recording)
    return messages


async def test_a_frame_of_deltas_of_five_conversations_reaches_a_process_as_one_message(
    alice, make_conversation, monkeypatch, sent
):
    monkeypatch.setattr(fanout, "ENABLED", False)
    layer = get_channel_layer()
    conversations = [await sync_to_async(make_conversation)() for _ in range(CONVERSATIONS)]
    tabs = [[await connect(c.pk, alice) for _ in range(2)] for c in conversations]
    turns = [turn(FIRST + index, DELTAS) for index in range(CONVERSATIONS)]
    groups = [conversation_group(c.pk) for c in conversations]

    await asyncio.gather(*(fanout.publish(layer, g, start) for g, (start, _, _) in zip(groups, turns, strict=True)))
    began = time.monotonic()
    for seq in range(DELTAS):  # every conversation's deltas, interleaved, as 5 generations publish within a frame
        for group, (_, deltas, _) in zip(groups, turns, strict=True):
            await fanout.publish(layer, group, deltas[seq])
    took = time.monotonic() - began
    await asyncio.gather(*(fanout.publish(layer, g, done) for g, (_, _, done) in zip(groups, turns, strict=True)))
    seen = [[await receive_until_final(tab, FIRST + i) for tab in pair] for i, pair in enumerate(tabs)]
    for pair in tabs:
        for tab in pair:
            await tab.disconnect()

    with_deltas = [kinds for kinds in sent if "chat.delta" in kinds]
    assert sum(kinds.count("chat.delta") for kinds in with_deltas) == CONVERSATIONS * DELTAS
    # 60 deltas published in a few milliseconds: one message, or two if a frame was due; on a machine so loaded
    # that publishing them spanned more frames, one a frame. Either way a frame gathers every conversation's deltas.
    frames = 2 + int(took / outbox.FRAME)
    assert len(with_deltas) <= frames, ([len(kinds) for kinds in sent], f"{took * 1000:.1f} ms")
    assert max(kinds.count("chat.delta") for kinds in with_deltas) >= CONVERSATIONS, [len(k) for k in sent]
    for index, pair in enumerate(seen):
        words = "".join(f"m{FIRST + index}w{seq} " for seq in range(1, DELTAS + 1))
        for events in pair:
            assert [event["type"] for event in events] == ["start", *["delta"] * DELTAS, "done"]
            assert [event["seq"] for event in events[1:-1]] == list(range(1, DELTAS + 1))
            assert "".join(event["text"] for event in events[1:-1]) == words


async def test_the_outbox_sends_a_channel_at_most_one_message_a_frame_and_the_first_at_once(monkeypatch):
    layer = get_channel_layer()
    times = []

    async def send(self, channel, events):
        times.append((time.monotonic(), len(events)))

    monkeypatch.setattr(outbox.Outbox, "_send", send)
    box = outbox.Outbox(layer, asyncio.get_running_loop())
    began = time.monotonic()
    tickets = []
    for index in range(32):  # an event every quarter of a frame for 8 frames (longer on a loaded machine)
        tickets.append(box.post(["specific.x!a" + outbox.INLET], {"type": "chat.delta", "n": index}))
        await asyncio.sleep(outbox.FRAME / 4)
    posting = time.monotonic() - began
    await asyncio.gather(*tickets)

    assert times[0][0] - began < 0.02  # the first after a pause goes at once (the sender's thread started)
    assert sum(count for _, count in times) == 32
    gaps = [later - earlier for (earlier, _), (later, _) in itertools.pairwise(times)]
    # At most one message a frame while the posts went on (and one for the last ones), never two within a frame.
    assert len(times) <= posting / outbox.FRAME + 2 and min(gaps) >= outbox.FRAME * 0.9, (posting, gaps)


async def test_a_failed_frame_fails_the_tickets_of_its_events_only(monkeypatch):
    layer = get_channel_layer()

    async def send(self, channel, events):
        if channel.startswith("specific.down"):
            raise ConnectionError("that process's Redis went away")

    monkeypatch.setattr(outbox.Outbox, "_send", send)
    box = outbox.Outbox(layer, asyncio.get_running_loop())
    both = box.post(["specific.down!a" + outbox.INLET, "specific.up!b" + outbox.INLET], {"type": "chat.start"})
    up = box.post(["specific.up!b" + outbox.INLET], {"type": "chat.delta"})
    await asyncio.wait([both, up])
    assert isinstance(both.exception(), ConnectionError) and up.exception() is None


async def test_a_reading_of_the_members_made_before_a_snapshot_was_asked_is_not_kept(monkeypatch):
    members = outbox.Members()
    asked = asyncio.Event()

    async def slow(layer, group):
        asked.set()
        await asyncio.sleep(0.05)
        return ("specific.a!1" + outbox.INLET,)

    monkeypatch.setattr(outbox, "read", slow)
    reading = asyncio.create_task(members.get(None, "conversation.1", fresh=False))
    await asked.wait()
    members.mark("conversation.1")  # a socket of another process asked for a snapshot meanwhile
    await reading
    assert members.known["conversation.1"][0] is None  # the next delta reads the members again
    await members.get(None, "conversation.1", fresh=False)
    assert members.known["conversation.1"][0] == ("specific.a!1" + outbox.INLET,)


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="the members' renewal times are Redis's")
async def test_an_inlet_that_stopped_renewing_is_sent_nothing():
    layer = get_channel_layer()
    group = "conversation.424242"
    key, connection = layer._group_key(group), layer.connection(layer.consistent_hash(group))
    alive, dead = (f"specific.{name}!1{outbox.INLET}" for name in ("alive", "dead"))
    now = time.time()
    await connection.zadd(key, {alive: now, dead: now - outbox.STALE - 1, "specific.old!socket": now - 600})
    try:
        found = await outbox.read(layer, group)
    finally:
        await connection.delete(key)
    # A dead process's inlet is skipped; a socket of an older version renews nothing and stays until the layer's
    # own group expiry.
    assert set(found) == {alive, "specific.old!socket"}


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="the sender's thread sends to Redis only")
async def test_the_senders_thread_ends_when_idle_and_the_next_post_still_leaves(monkeypatch):
    layer = get_channel_layer()
    monkeypatch.setattr(outbox.Sender, "IDLE", 0.05)
    sent = []

    async def send(self, channel, events):
        sent.append((threading.current_thread().name, [event["n"] for event in events]))

    monkeypatch.setattr(outbox.Outbox, "_send", send)
    box = outbox.Outbox(layer, asyncio.get_running_loop())
    await box.post(["specific.x!a" + outbox.INLET], {"type": "chat.delta", "n": 1})
    first = box._sender.thread
    first.join(timeout=5)  # idle: it ended
    assert not first.is_alive() and box._sender.loop is None
    await asyncio.wait_for(box.post(["specific.x!a" + outbox.INLET], {"type": "chat.delta", "n": 2}), 5)
    assert box._sender.thread is not first
    assert sent == [("outbox", [1]), ("outbox", [2])]  # sent off the process's loop, each once
