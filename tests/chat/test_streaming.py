"""The generation runner and the websocket relay, against the real local API over HTTP."""

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from playground.chat import services
from playground.chat.models import Message
from playground.chat.relay.generation import running
from playground.chat.relay.recovery import mark_interrupted
from tests.chat.conftest import connect, finish, receive_until_final, stream_statuses
from tests.waiting import until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]
UNLIMITED = {"X-Local-Token-Rate": "0"}


async def test_an_answer_streams_as_numbered_deltas_then_done_and_is_saved(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    turn = await services.send(conversation, "write 120 words about rivers")
    events = await receive_until_final(ws, turn.assistant.pk)
    await ws.disconnect()

    kinds = [e["type"] for e in events]
    # The placeholder is announced once the upstream call has started, so a first delta may come before it.
    start = next(e for e in events if e["type"] == "start")
    assert f'data-message-id="{turn.assistant.pk}"' in start["html"]
    deltas = [e for e in events if e["type"] == "delta"]
    assert len(deltas) >= 2
    seqs = [d["seq"] for d in deltas]
    assert seqs == sorted(set(seqs))
    message = await Message.objects.aget(pk=turn.assistant.pk)
    assert message.status == "complete"
    assert "".join(d["text"] for d in deltas) == message.content
    assert len(message.content.split()) >= 100
    # A complete answer's end: its last words and footer, which the page finishes the article with (articles.js).
    assert kinds[-1] == "done" and events[-1]["status"] == "complete" and "html" not in events[-1]
    shown = "".join(b for d in deltas for b in d["blocks"]) + "".join(events[-1]["last"])
    assert shown == message.html
    assert message.finish_reason == "stop"
    assert message.usage["completion_tokens"] > 0 and message.trace_id
    assert 0 <= message.ttft_ms <= message.total_ms
    assert message.seq == seqs[-1]


async def test_deltas_arriving_within_a_frame_are_coalesced(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    turn = await services.send(conversation, "write 1500 words about mountains", headers=UNLIMITED)
    generation = running(turn.assistant.pk)
    events = await receive_until_final(ws, turn.assistant.pk)
    await ws.disconnect()

    deltas = [e for e in events if e["type"] == "delta"]
    assert generation.chunks > 1000
    assert len(deltas) < generation.chunks / 5
    message = await Message.objects.aget(pk=turn.assistant.pk)
    assert "".join(d["text"] for d in deltas) == message.content


async def test_stop_closes_the_upstream_connection_and_keeps_the_partial_answer(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    turn = await services.send(conversation, "write 5000 words about oceans")
    mid = turn.assistant.pk
    received = ""
    while len(received) < 200:
        event = await ws.receive_json_from(timeout=10)
        if event["type"] == "delta":
            received += event["text"]
    trace_id = running(mid).trace_id
    await ws.send_json_to({"type": "stop", "message_id": mid})
    events = await receive_until_final(ws, mid, timeout=5)
    await ws.disconnect()

    assert events[-1]["type"] == "done" and 'data-status="stopped"' in events[-1]["html"]
    message = await Message.objects.aget(pk=mid)
    assert message.status == "stopped"
    assert message.content.startswith(received) and len(message.content) < 5000

    async def ended():
        record = (await stream_statuses(live_server, conversation)).get(trace_id)
        return record if record and record["status"] != "streaming" else None

    record = await until(ended, timeout=10, what="the local API to end the stream")
    assert record["status"] == "cancelled"


async def test_closing_every_websocket_does_not_stop_the_generation(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    turn = await services.send(conversation, "write 200 words about forests")
    while (await ws.receive_json_from(timeout=10))["type"] != "delta":
        pass
    await ws.disconnect()

    message = await finish(turn.assistant.pk)
    assert message.status == "complete" and message.finish_reason == "stop"
    assert len(message.content.split()) >= 180


async def test_a_subscriber_joining_mid_stream_gets_every_delta_exactly_once(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    first = await connect(conversation.pk, alice)
    turn = await services.send(conversation, "write 500 words about deserts")
    mid = turn.assistant.pk
    for _ in range(5):
        while (await first.receive_json_from(timeout=10))["type"] != "delta":
            pass
    second = await connect(conversation.pk, alice)
    await second.send_json_to({"type": "subscribe", "message_id": mid, "after": 0})
    events = await receive_until_final(second, mid)
    await first.disconnect()
    await second.disconnect()

    assert events[0]["type"] == "snapshot" and events[0]["content"]
    deltas = [e for e in events[1:] if e["type"] == "delta"]
    assert deltas, "the answer was over before the second tab joined"
    assert [d["seq"] for d in deltas] == sorted({d["seq"] for d in deltas})
    assert deltas[0]["seq"] > events[0]["seq"]
    message = await Message.objects.aget(pk=mid)
    assert events[0]["content"] + "".join(d["text"] for d in deltas) == message.content


async def test_a_subscriber_to_a_finished_answer_gets_its_final_render(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    turn = await services.send(conversation, "hello")
    message = await finish(turn.assistant.pk)
    ws = await connect(conversation.pk, alice)
    await ws.send_json_to({"type": "subscribe", "message_id": message.pk, "after": 0})
    event = await ws.receive_json_from(timeout=5)
    await ws.disconnect()
    assert event["type"] == "done" and 'data-status="complete"' in event["html"]


async def test_a_reconnect_after_the_generator_is_gone_gets_what_the_database_holds(alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    message = await Message.objects.acreate(
        conversation=conversation,
        role="assistant",
        status="streaming",
        content="What arrived before",
        seq=7,
        heartbeat=timezone.now(),
    )

    async def stamp():  # a generation alive but out of reach (its process cannot answer) still stamps the row
        while True:
            await asyncio.sleep(0.3)
            await Message.objects.filter(pk=message.pk).aupdate(heartbeat=timezone.now())

    stamper = asyncio.create_task(stamp())
    try:
        ws = await connect(conversation.pk, alice)
        await ws.send_json_to({"type": "subscribe", "message_id": message.pk, "after": 3})
        event = await ws.receive_json_from(timeout=5)
        await ws.disconnect()
    finally:
        stamper.cancel()
    assert event["type"] == "snapshot" and event["seq"] == 7 and event["content"] == "What arrived before"
    assert (await Message.objects.aget(pk=message.pk)).status == "streaming"


async def test_a_message_left_streaming_by_a_dead_process_is_marked_interrupted(alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    message = await Message.objects.acreate(
        conversation=conversation,
        role="assistant",
        status="streaming",
        content="Half an answer",
        seq=12,
        heartbeat=timezone.now() - timedelta(minutes=5),
    )
    ws = await connect(conversation.pk, alice)
    await ws.send_json_to({"type": "subscribe", "message_id": message.pk, "after": 0})
    event = await ws.receive_json_from(timeout=5)
    await ws.disconnect()
    assert event["type"] == "done" and 'data-status="interrupted"' in event["html"]
    assert "Half an answer" in event["html"]
    message = await Message.objects.aget(pk=message.pk)
    assert message.status == "interrupted" and message.content == "Half an answer"


def test_the_sweep_marks_only_stale_streaming_messages(alice, make_conversation):
    conversation = make_conversation()
    stale = Message.objects.create(
        conversation=conversation,
        role="assistant",
        status="streaming",
        heartbeat=timezone.now() - timedelta(seconds=30),
    )
    fresh = Message.objects.create(
        conversation=conversation, role="assistant", status="streaming", heartbeat=timezone.now()
    )
    assert mark_interrupted() == 1
    stale.refresh_from_db()
    fresh.refresh_from_db()
    assert (stale.status, fresh.status) == ("interrupted", "streaming")


async def test_reasoning_streams_into_its_own_field(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)("local/reasoner")
    ws = await connect(conversation.pk, alice)
    content = "what is 17 * 23? [think:17 × 23 = 340 + 51 = 391.] [say:It is **391**.]"
    turn = await services.send(conversation, content, headers=UNLIMITED)
    events = await receive_until_final(ws, turn.assistant.pk)
    await ws.disconnect()
    message = await Message.objects.aget(pk=turn.assistant.pk)
    assert (message.reasoning, message.content) == ("17 × 23 = 340 + 51 = 391.", "It is **391**.")
    assert "".join(e.get("reasoning", "") for e in events if e["type"] == "delta") == message.reasoning
    shown = "".join(b for e in events for b in e.get("blocks", []) + e.get("last", []))
    assert "<strong>391</strong>" in shown
    assert events[-1]["meta"]["reasoning_tokens"] == (message.reasoning_tokens or 0)


async def test_non_streaming_mode_gives_one_done_event(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)(params={"stream": False})
    ws = await connect(conversation.pk, alice)
    turn = await services.send(conversation, "write 50 words about lakes")
    assert turn.request.body["stream"] is False
    events = await receive_until_final(ws, turn.assistant.pk)
    await ws.disconnect()
    message = await Message.objects.aget(pk=turn.assistant.pk)
    assert message.status == "complete" and len(message.content.split()) >= 40
    assert [e["type"] for e in events if e["type"] != "delta"] == ["start", "done"]
    assert message.usage["completion_tokens"] > 0 and message.trace_id


async def test_hostile_frames_are_answered_invalid_and_the_socket_keeps_working(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    turn = await services.send(conversation, "hello")
    message = await finish(turn.assistant.pk)
    ws = await connect(conversation.pk, alice)
    for frame in ("[" * 100_000, '{"type": "subscribe", "message_id": NaN}', '{"type": "sub\\u0000scribe"}', "nope"):
        await ws.send_to(text_data=frame)
    # Each is answered once, in words (the frame boundary, lib/frames.py), and the socket stays open.
    for _ in range(4):
        assert (await ws.receive_json_from(timeout=5))["type"] == "invalid"
    assert await ws.receive_nothing(timeout=0.3)
    await ws.send_json_to({"type": "subscribe", "message_id": message.pk, "after": 0})
    event = await ws.receive_json_from(timeout=5)
    await ws.disconnect()
    assert event["type"] == "done"
