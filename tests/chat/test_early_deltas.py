"""The first words of an answer reach the socket that asked for it before the turn's rows are written: the
upstream call starts before the rows, and its deltas go to the asking socket in memory, named by the frame's id.
The other tabs get them in one delta after the start; the saved answer is the one shown on every path."""

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async

from playground.chat.models import Message
from playground.chat.services import turns
from tests.chat.conftest import connect, finish, receive_until_final

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


@pytest.fixture
def held_rows(monkeypatch):
    """The turn's rows wait until the test lets them be written (the upstream call has started by then)."""
    go = threading.Event()
    write = turns._write_turn

    def held(*args, **kwargs):
        assert go.wait(30)
        return write(*args, **kwargs)

    monkeypatch.setattr(turns, "_write_turn", held)
    yield go
    go.set()


async def early_deltas(ws, frame_id: str, count: int = 1) -> list[dict]:
    """The deltas that reach the socket while the rows wait (the database is busy: no query here)."""
    deltas = []
    while len(deltas) < count:
        event = await ws.receive_json_from(timeout=15)
        assert event["type"] == "delta", event
        deltas.append(event)
    assert all(e["action"] == frame_id and e["message_id"] is None for e in deltas)
    return deltas


async def test_a_delta_reaches_the_asking_socket_before_the_rows_are_written(
    live_server, alice, make_conversation, held_rows
):
    conversation = await sync_to_async(make_conversation)()
    asking, other = await connect(conversation.pk, alice), await connect(conversation.pk, alice)
    await asking.send_json_to({"action": "send", "id": "e-1", "content": "write 60 words about lakes"})
    try:
        early = await early_deltas(asking, "e-1")  # message_id None: the generation is not bound to a row yet
    finally:
        held_rows.set()
    reply = await asking.receive_json_from(timeout=30)
    while reply["type"] == "delta":
        early.append(reply)
        reply = await asking.receive_json_from(timeout=30)
    assert reply["type"] == "sent" and reply["id"] == "e-1"
    mine = await receive_until_final(asking, reply["message_id"])
    theirs = await receive_until_final(other, reply["message_id"])
    for ws in (asking, other):
        await ws.disconnect()
    message = await finish(reply["message_id"])
    assert message.status == "complete" and message.content

    deltas = early + [e for e in mine if e["type"] == "delta"]
    seqs = [e["seq"] for e in deltas]
    assert seqs == sorted(set(seqs)) and "".join(e["text"] for e in deltas) == message.content
    # The other tab: the start, then what the asking tab got alone in one delta, then the rest.
    assert theirs[0]["type"] == "start" and theirs[1]["type"] == "delta" and theirs[1]["seq"] >= early[0]["seq"]
    assert "".join(e["text"] for e in theirs if e["type"] == "delta") == message.content


async def test_an_asking_socket_that_closes_before_the_rows_costs_the_answer_nothing(
    live_server, alice, make_conversation, held_rows
):
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    await ws.send_json_to({"action": "send", "id": "gone-1", "content": "write 40 words about rain"})
    try:
        await early_deltas(ws, "gone-1")
        await ws.disconnect()
    finally:
        held_rows.set()
    for _ in range(200):
        message = await Message.objects.filter(conversation=conversation, role="assistant").afirst()
        if message is not None:
            break
        await asyncio.sleep(0.05)
    message = await finish(message.pk)
    assert message.status == "complete" and len(message.content.split()) >= 30
