"""A delta that never reaches a socket (Redis drops a message for a channel at capacity; a member the fan-out did
not know of yet) costs that socket a snapshot, never a word: each delta names the seq it continues (`after`), and a
socket that has less asks for its answer again (chat/replay.py)."""

import pytest
from asgiref.sync import sync_to_async

from playground.chat.consumers import ChatConsumer
from tests.chat.conftest import connect, finish, receive_until_final

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def shown(events: list[dict]) -> str:
    """What a page shows after these events: a snapshot replaces the text, a delta appends to it."""
    text = ""
    for event in events:
        if event["type"] == "snapshot":
            text = event["content"]
        elif event["type"] == "delta":
            text += event.get("text") or ""
    return text


@pytest.fixture
def dropped(monkeypatch):
    """The watching socket never gets its third delta."""
    lost = []
    hand = ChatConsumer.hand

    def lossy(self, event):
        if event["type"] == "chat.delta" and getattr(self, "watching", False):
            self.deltas_seen = getattr(self, "deltas_seen", 0) + 1
            if self.deltas_seen == 3:
                lost.append(event)
                return
        hand(self, event)

    monkeypatch.setattr(ChatConsumer, "hand", lossy)
    return lost


async def test_a_socket_that_missed_a_delta_gets_a_snapshot_and_shows_the_whole_answer(
    live_server, alice, make_conversation, dropped
):
    from playground.chat.relay import fanout

    conversation = await sync_to_async(make_conversation)()
    group = f"conversation.{conversation.pk}"
    asking = await connect(conversation.pk, alice)
    before = set(fanout.followers(group))
    watching = await connect(conversation.pk, alice)
    # Marked before the send: on a loaded machine most of the answer may be out before the `sent` reply.
    (watcher,) = set(fanout.followers(group)) - before
    watcher.watching = True
    await asking.send_json_to({"action": "send", "id": "l-1", "content": "write 80 words about lakes"})
    reply = await asking.receive_json_from(timeout=30)
    while reply["type"] == "delta":
        reply = await asking.receive_json_from(timeout=30)
    assert reply["type"] == "sent"
    theirs = await receive_until_final(watching, reply["message_id"])
    await receive_until_final(asking, reply["message_id"])
    for ws in (asking, watching):
        await ws.disconnect()
    message = await finish(reply["message_id"])

    assert dropped, "no delta was dropped: the answer was too short to test anything"
    kinds = [event["type"] for event in theirs]
    assert "snapshot" in kinds[kinds.index("delta") :], kinds  # asked again after the gap, not before
    assert shown(theirs) == message.content
