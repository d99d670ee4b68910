"""Actions over the chat websocket: a send frame starts a turn (its first deltas may come before its reply, named
by the frame's id, even before its rows are written), refused input comes back as an `invalid` frame naming the
field and the limit, another user's answer is refused, and the form POST (htmx or none) still works."""

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from playground.chat import services
from playground.chat.models import Message
from tests.chat.conftest import connect, finish, receive_until_final

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


async def reply_to(ws, frame_id, timeout=30):
    while True:
        event = await ws.receive_json_from(timeout=timeout)
        if event.get("id") == frame_id:
            return event


async def test_a_send_frame_starts_the_turn_and_every_delta_reaches_its_socket_once(
    live_server, alice, make_conversation
):
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    await ws.send_json_to({"action": "send", "id": "tab1-1", "content": "write 30 words about rain"})
    early, reply = [], await ws.receive_json_from(timeout=30)
    while reply["type"] == "delta":  # before the reply: named by the frame's id (the rows may not exist yet)
        assert reply["action"] == "tab1-1"
        early.append(reply)
        reply = await ws.receive_json_from(timeout=30)
    assert reply["type"] == "sent" and reply["id"] == "tab1-1"
    # The turn as data (the page builds its articles from prototypes, chat/prototypes.py), nothing rendered.
    assert "html" not in reply and reply["placeholder"]["answer"]["id"] == reply["message_id"]
    assert reply["placeholder"]["question"]["content"] == "write 30 words about rain"
    events = await receive_until_final(ws, reply["message_id"])
    await ws.disconnect()
    kinds = [e["type"] for e in events]
    assert kinds.count("start") == 1 and kinds[-1] == "done"
    deltas = early + [e for e in events if e["type"] == "delta"]
    seqs = [e["seq"] for e in deltas]
    assert deltas and seqs == sorted(set(seqs)) and seqs[0] >= 1
    message = await finish(reply["message_id"])
    assert "".join(e["text"] for e in deltas) == message.content
    assert message.status == "complete" and message.content
    user = await Message.objects.aget(conversation=conversation, role="user")
    assert user.content == "write 30 words about rain"
    await conversation.arefresh_from_db()
    assert conversation.title == "write 30 words about rain"


async def test_the_type_key_names_the_action_too(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    await ws.send_json_to({"type": "send", "id": "t", "content": "write 5 words"})
    reply = await reply_to(ws, "t")
    assert reply["type"] == "sent"
    await finish(reply["message_id"])
    await ws.disconnect()


async def test_invalid_frames_are_answered_with_the_field_and_the_limit_and_nothing_is_saved(
    live_server, alice, make_conversation
):
    conversation = await sync_to_async(make_conversation)("local/reasoner")
    ws = await connect(conversation.pk, alice)

    await ws.send_json_to({"action": "send", "id": "e1", "content": "   "})
    assert await reply_to(ws, "e1") == {"type": "invalid", "id": "e1", "errors": ["Message: write something first."]}

    await ws.send_json_to({"action": "send", "id": "e2", "content": "hi", "thinking_budget": "50", "stream": "on"})
    reply = await reply_to(ws, "e2")
    assert reply["type"] == "invalid" and "thinking_budget: must be at least 128." in reply["errors"]

    await ws.send_json_to({"action": "send", "id": "e3", "content": "x" * 200_001})
    reply = await reply_to(ws, "e3")
    assert reply["type"] == "invalid" and reply["errors"] == ["Message: at most 200,000 characters (it has 200001)."]

    await ws.send_json_to({"action": "send", "id": "e4", "content": {"nested": "object"}})
    reply = await reply_to(ws, "e4")
    assert reply == {"type": "invalid", "id": "e4", "errors": ["Fields: each value must be text or a list of texts."]}

    await ws.send_json_to({"action": "send", "id": "no spaces allowed", "content": "hello"})
    reply = await ws.receive_json_from(timeout=10)
    assert reply["type"] == "invalid" and reply["id"] is None and reply["errors"][0].startswith("id:")

    await ws.disconnect()
    assert not await Message.objects.aexists()


async def test_another_users_answer_is_refused_and_their_socket_is_closed(live_server, alice, bob, make_conversation):
    from channels.testing import WebsocketCommunicator

    from playground.asgi import application
    from tests.chat.conftest import ORIGIN

    theirs = await sync_to_async(make_conversation)()
    failed = await Message.objects.acreate(conversation=theirs, role="assistant", status=Message.ERROR)
    mine = await sync_to_async(make_conversation)(owner=bob)
    ws = await connect(mine.pk, bob)
    await ws.send_json_to({"action": "retry", "id": "r1", "message_id": failed.pk})
    assert await reply_to(ws, "r1") == {"type": "refused", "id": "r1", "error": "No such answer."}
    await ws.disconnect()
    assert await Message.objects.filter(conversation=theirs).acount() == 1
    assert not await Message.objects.filter(conversation=mine).aexists()

    # Bob's socket on Alice's conversation never opens, so no frame of his reaches it.
    other = WebsocketCommunicator(application, f"/ws/chat/{theirs.pk}/", headers=ORIGIN)
    other.scope["user"] = bob
    await other.connect()
    assert (await other.receive_output(timeout=2)) == {"type": "websocket.close", "code": 4404}


async def test_a_retry_frame_regenerates_a_failed_answer(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    turn = await services.send(conversation, "hello [fault:503]")
    failed = await finish(turn.assistant.pk)
    assert failed.status == "error"
    await Message.objects.filter(pk=turn.user_message.pk).aupdate(content="hello")
    ws = await connect(conversation.pk, alice)
    await ws.send_json_to({"action": "retry", "id": "r2", "message_id": turn.user_message.pk})
    assert (await reply_to(ws, "r2"))["type"] == "refused"
    await ws.send_json_to({"action": "retry", "id": "r3", "message_id": failed.pk})
    reply = await reply_to(ws, "r3")
    assert reply["type"] == "sent" and reply["replaces"] == failed.pk
    events = await receive_until_final(ws, reply["message_id"])
    await ws.disconnect()
    assert events[-1]["type"] == "done" and events[-1]["replaced"] == failed.pk
    assert not await Message.objects.filter(pk=failed.pk).aexists()


async def test_the_form_post_without_javascript_still_sends(live_server, alice, async_client, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    await async_client.aforce_login(alice)
    response = await async_client.post(reverse("chat:send", args=[conversation.pk]), {"content": "write 5 words"})
    assert response.status_code == 302 and response["Location"] == reverse("chat:conversation", args=[conversation.pk])
    assert await Message.objects.filter(conversation=conversation, role="user", content="write 5 words").aexists()
    assistant = await Message.objects.aget(conversation=conversation, role="assistant")
    assert (await finish(assistant.pk)).status == "complete"


async def test_sockets_of_the_generators_process_get_the_deltas_in_memory(
    live_server, alice, make_conversation, monkeypatch
):
    from channels.layers import get_channel_layer

    from playground.chat.relay import outbox

    conversation = await sync_to_async(make_conversation)()
    tabs = [await connect(conversation.pk, alice) for _ in range(3)]
    layer = get_channel_layer()
    real_group_send, real_send, published = layer.group_send, outbox.Outbox._send, []

    async def recording_group(group, event):
        published.append(event["type"])
        await real_group_send(group, event)

    async def recording(self, channel, events):
        published.extend(event["type"] for event in events)
        await real_send(self, channel, events)

    monkeypatch.setattr(layer, "group_send", recording_group)
    monkeypatch.setattr(outbox.Outbox, "_send", recording)
    try:
        await tabs[0].send_json_to({"action": "send", "id": "m1", "content": "write 60 words about lakes"})
        early, reply = [], await tabs[0].receive_json_from(timeout=30)
        while reply.get("id") != "m1":  # the asking tab's first words may come alone, before the reply
            if reply["type"] == "delta" and reply.get("action") == "m1":
                early.append(reply["text"])
            reply = await tabs[0].receive_json_from(timeout=30)
        texts = []
        for tab in tabs:
            events = await receive_until_final(tab, reply["message_id"])
            assert events[0]["type"] == "start" and events[-1]["type"] == "done"
            before = "".join(early) if tab is tabs[0] else ""
            texts.append(before + "".join(e["text"] for e in events if e["type"] == "delta"))
    finally:
        for tab in tabs:
            await tab.disconnect()
    message = await Message.objects.aget(pk=reply["message_id"])
    assert texts == [message.content] * 3  # each delta once: the copies that came back by the layer were dropped
    # Every socket is in this process, so the group's only member is its inlet: nothing of the turn went through
    # the channel layer, on either layer (relay/fanout.py, outbox.py).
    assert [kind for kind in published if kind.startswith("chat.")] == []


async def test_a_ping_is_answered_with_a_pong(alice, make_conversation):
    # The page's heartbeat (socket.js): a socket that answers nothing is dropped and the banner says so at once.
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    await ws.send_json_to({"type": "ping"})
    assert await ws.receive_json_from(timeout=5) == {"type": "pong"}
    await ws.disconnect()
