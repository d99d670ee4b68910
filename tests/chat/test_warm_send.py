"""A send started before its checks (chat/warm.py): after a warm frame (the tab's typing), a send frame with the
same panel fields starts its upstream call at once; the checks adopt it only when they build the same request,
and drop it (cancelled upstream, nothing saved or shown) when the conversation changed meanwhile or the send is
refused."""

import asyncio
from types import SimpleNamespace

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.http import QueryDict

from playground.chat import warm
from playground.chat.models import Conversation, Message
from tests.chat.conftest import connect, receive_until_final, stream_statuses

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


@pytest.fixture
def spy(monkeypatch):
    """What the socket read (`loads`), what each send started early (`early`: an Early or None) and the bodies
    its checks built (`checked`)."""
    record = SimpleNamespace(loads=[], early=[], checked=[])
    load, start, adopting = warm.load, warm.WarmSend.start, warm.Early.adopting

    def spy_load(*args):
        result = load(*args)
        record.loads.append(result)
        return result

    async def spy_start(self, fields, launch):
        early = await start(self, fields, launch)
        record.early.append(early)
        return early

    def spy_adopting(self, launch):
        adopt = adopting(self, launch)

        def checked(endpoint, body, limits=None):
            record.checked.append(body)
            return adopt(endpoint, body, limits)

        return checked

    monkeypatch.setattr(warm, "load", spy_load)
    monkeypatch.setattr(warm.WarmSend, "start", spy_start)
    monkeypatch.setattr(warm.Early, "adopting", spy_adopting)
    return record


async def until(predicate, timeout=10.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await predicate():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def ended(early) -> bool:
    return early.generation.task is not None and early.generation.task.done()


async def reply_to(ws, frame_id):
    while True:
        event = await ws.receive_json_from(timeout=30)
        if event.get("id") == frame_id:
            return event


async def turn(ws, frame_id, **fields):
    """A send frame and its turn to the end; the `sent` reply."""
    await ws.send_json_to({"action": "send", "id": frame_id, **fields})
    reply = await reply_to(ws, frame_id)
    if reply["type"] == "sent":
        await receive_until_final(ws, reply["message_id"])
    return reply


async def warmed(ws, spy, **fields):
    """The warm frames a tab sends while someone types (every READ_EVERY here), until the socket has read the
    conversation."""
    count = len(spy.loads)

    async def read():
        if len(spy.loads) > count:
            return True
        await ws.send_json_to({"type": "warm", **fields})
        await asyncio.sleep(warm.READ_EVERY)
        return len(spy.loads) > count

    await until(read)
    return spy.loads[-1]


async def typing_after_a_turn(make_conversation, alice, spy):
    """A conversation with one turn, whose socket has read it ahead for the next send."""
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    await turn(ws, "s1", content="write 5 words")
    assert await warmed(ws, spy) is not None
    return conversation, ws


async def test_a_send_after_typing_is_started_early_and_adopted_with_exactly_its_request(
    live_server, alice, make_conversation, spy
):
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    await turn(ws, "s1", content="write 5 words", temperature="0.3", stream="on")
    assert await warmed(ws, spy, temperature="0.3", stream="on") is not None
    reply = await turn(ws, "s2", content="write 6 words", temperature="0.3", stream="on")
    await ws.disconnect()

    early = spy.early[-1]
    assert reply["type"] == "sent" and reply["early"] is True and early is not None and early.adopted
    assert early.generation.message_id == reply["message_id"]
    assert spy.checked[-1] == early.body
    first_answer = await Message.objects.filter(conversation=conversation, role="assistant").order_by("pk").afirst()
    assert early.body["messages"] == [
        {"role": "user", "content": "write 5 words"},
        {"role": "assistant", "content": first_answer.content},
        {"role": "user", "content": "write 6 words"},
    ]
    assert early.body["temperature"] == 0.3
    answer = await Message.objects.aget(pk=reply["message_id"])
    assert answer.status == "complete" and answer.content
    # One upstream request per turn, none cancelled.
    statuses = sorted(r["status"] for r in (await stream_statuses(live_server, conversation)).values())
    assert statuses == ["completed", "completed"]


async def test_a_conversation_changed_since_the_typing_gets_the_checked_request_and_the_early_one_is_cancelled(
    live_server, alice, make_conversation, spy
):
    conversation, ws = await typing_after_a_turn(make_conversation, alice, spy)
    # Another tab's panel changes the system prompt: no event reaches this socket.
    await Conversation.objects.filter(pk=conversation.pk).aupdate(system_prompt="Answer in French.")
    reply = await turn(ws, "s2", content="write 6 words")
    await ws.disconnect()

    early = spy.early[-1]
    assert early is not None and not early.adopted and reply["early"] is False
    assert early.body["messages"][0]["role"] == "user"
    assert spy.checked[-1]["messages"][0] == {"role": "system", "content": "Answer in French."}
    assert early.generation.message_id is None  # never bound: nothing of it was saved or published
    assert (await Message.objects.aget(pk=reply["message_id"])).status == "complete"

    await until(lambda: ended(early))
    # The early call was cut off before its answer streamed, or while it did: it never ran to its end.
    statuses = sorted(r["status"] for r in (await stream_statuses(live_server, conversation)).values())
    assert statuses in (["completed", "completed"], ["cancelled", "completed", "completed"])


async def test_a_send_its_checks_refuse_cancels_the_early_call_and_saves_nothing(
    live_server, alice, make_conversation, spy
):
    conversation, ws = await typing_after_a_turn(make_conversation, alice, spy)
    key = await sync_to_async(conversation.connection.get_key)()
    await Message.objects.filter(conversation=conversation).adelete()
    await Conversation.objects.filter(pk=conversation.pk).adelete()
    reply = await turn(ws, "s2", content="write 6 words")
    await ws.disconnect()

    assert reply == {"type": "refused", "id": "s2", "error": "No such conversation."}
    assert spy.early[-1] is not None and not spy.early[-1].adopted
    assert not await Message.objects.aexists()

    await until(lambda: ended(spy.early[-1]))
    async with httpx.AsyncClient() as http:
        response = await http.get(f"{live_server.api_url}/debug/streams", headers={"Authorization": f"Bearer {key}"})
    assert sorted(r["status"] for r in response.json()["recent"]) in (["completed"], ["cancelled", "completed"])


async def test_warm_frames_are_read_one_at_a_time_and_not_too_often(live_server, alice, make_conversation, spy):
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    for temperature in ("0.1", "0.2", "0.3", "0.4", "0.5"):  # a panel that changes faster than READ_EVERY
        await ws.send_json_to({"type": "warm", "temperature": temperature, "stream": "on"})
    await asyncio.sleep(warm.READ_EVERY * 2)
    await ws.disconnect()
    assert len(spy.loads) == 1 and spy.loads[0].panel == {"temperature": ["0.1"], "stream": ["on"]}


async def test_nothing_starts_early_without_typing_with_another_panel_or_twice_from_one_reading(
    live_server, alice, make_conversation, spy
):
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    await turn(ws, "s1", content="write 5 words")  # nobody typed
    assert await warmed(ws, spy, temperature="0.3", stream="on") is not None
    await turn(ws, "s2", content="write 6 words", temperature="0.9", stream="on")  # the panel changed since
    assert await warmed(ws, spy) is not None
    await turn(ws, "s3", content="write 7 words")  # early: the reading is used up
    await turn(ws, "s4", content="write 8 words")
    await ws.disconnect()
    assert [e is not None for e in spy.early] == [False, False, True, False]
    assert spy.early[2].adopted


def test_only_a_plain_send_is_read_ahead(alice, make_conversation):
    conversation = make_conversation()
    user = Message.objects.create(conversation=conversation, role="user", content="hi")
    answer = Message.objects.create(
        conversation=conversation, role="assistant", parent=user, status=Message.STREAMING, content="he"
    )
    assert warm.load(alice, conversation.pk, QueryDict()) is None  # an answer is generating

    answer.status = Message.COMPLETE
    answer.tool_calls = [{"id": "call_1", "type": "function", "function": {"name": "clock", "arguments": "{}"}}]
    answer.save()
    assert warm.load(alice, conversation.pk, QueryDict()) is None  # a tool call waits for its result

    answer.tool_calls = None
    answer.save()
    ready = warm.load(alice, conversation.pk, QueryDict())
    assert ready is not None and [m.pk for m in ready.history] == [user.pk, answer.pk]
    assert warm.load(alice, conversation.pk, QueryDict("temperature=7&stream=on")) is None  # the checks refuse it
