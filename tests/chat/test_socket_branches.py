"""Branch and compare actions over the chat websocket: edit, regenerate and compare make the same rows and send
the same upstream bodies as their htmx POSTs; another user's message is refused; refused input is `invalid`
naming the field and the limit."""

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from playground.chat import branches
from playground.chat.models import Conversation, Message
from playground.upstream import client
from tests.chat.conftest import connect, finish
from tests.chat.test_socket_actions import reply_to

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

HTMX = {"HX-Request": "true"}


@pytest.fixture
def bodies(monkeypatch):
    sent = []
    original = client.chat_stream

    def spy(endpoint, body, headers=None, **options):
        sent.append(body)
        return original(endpoint, body, headers, **options)

    monkeypatch.setattr(client, "chat_stream", spy)
    return sent


def seeded(make_conversation):
    """q ─ a, a finished exchange."""
    conversation = make_conversation()
    q = branches.add(conversation, None, role="user", content="Name a river in France.")
    a = branches.add(conversation, q.pk, role="assistant", content="The Loire.", status=Message.COMPLETE)
    return conversation, q, a


def shape(conversation_pk) -> list[tuple]:
    """Every row as (role, content of a question, parent's place, selected, compare column?) in id order."""
    rows = list(Message.objects.filter(conversation_id=conversation_pk).order_by("pk"))
    place = {row.pk: index for index, row in enumerate(rows)}
    return [
        (r.role, r.content if r.role == "user" else "", place.get(r.parent_id), r.selected, bool(r.compare))
        for r in rows
    ]


async def finish_all(conversation_pk):
    for pk in [m.pk async for m in Message.objects.filter(conversation_id=conversation_pk, role="assistant")]:
        message = await finish(pk)
        assert message.status != Message.STREAMING


CASES = [
    ("edit", lambda q, a: ("edit", [q.pk]), lambda q, a: {"message_id": q.pk, "content": "And in Spain?"}),
    ("regenerate", lambda q, a: ("regenerate", [a.pk]), lambda q, a: {"message_id": a.pk}),
    (
        "compare",
        lambda q, a: ("compare", []),
        lambda q, a: {"content": "", "model_1": "local/chat", "model_2": "local/tools", "params_2": '{"seed": 3}'},
    ),
]


@pytest.mark.parametrize(("name", "url", "fields"), CASES, ids=[c[0] for c in CASES])
async def test_the_socket_action_makes_the_rows_and_bodies_of_the_post(
    live_server, alice, async_client, make_conversation, bodies, name, url, fields
):
    by_post, q1, a1 = await sync_to_async(seeded)(make_conversation)
    by_socket, q2, a2 = await sync_to_async(seeded)(make_conversation)

    await async_client.aforce_login(alice)
    view, args = url(q1, a1)
    response = await async_client.post(reverse(f"chat:{view}", args=[by_post.pk, *args]), fields(q1, a1), headers=HTMX)
    assert response.status_code == 200, response.content
    assert response.content.decode().count("<article") >= 2
    await finish_all(by_post.pk)
    posted = list(bodies)

    ws = await connect(by_socket.pk, alice)
    await ws.send_json_to({"action": name, "id": "b1", **fields(q2, a2)})
    reply = await reply_to(ws, "b1")
    await ws.disconnect()
    assert reply["type"] == "sent", reply
    await finish_all(by_socket.pk)

    assert bodies[len(posted) :] == posted and posted
    assert await sync_to_async(shape)(by_socket.pk) == await sync_to_async(shape)(by_post.pk)
    new = await sync_to_async(list)(
        Message.objects.filter(conversation=by_socket, pk__gt=a2.pk).order_by("pk").values_list("pk", flat=True)
    )
    assert reply["message_ids"] == new
    thread = await sync_to_async(branches.thread)(await Conversation.objects.aget(pk=by_socket.pk))
    assert reply["thread"].count("<article") == response.content.decode().count("<article") >= 2
    for message in thread:
        assert f'data-message-id="{message.pk}"' in reply["thread"]


async def test_another_users_message_is_refused(live_server, alice, bob, make_conversation):
    _theirs, q, a = await sync_to_async(seeded)(make_conversation)
    mine = await sync_to_async(make_conversation)(owner=bob)
    ws = await connect(mine.pk, bob)
    await ws.send_json_to({"action": "edit", "id": "x1", "message_id": q.pk, "content": "mine now"})
    assert await reply_to(ws, "x1") == {"type": "refused", "id": "x1", "error": "No such message."}
    await ws.send_json_to({"action": "regenerate", "id": "x2", "message_id": a.pk})
    assert (await reply_to(ws, "x2"))["type"] == "refused"
    await ws.send_json_to({"action": "tool_results", "id": "x3", "message_id": a.pk, "result:c1": "sunny"})
    assert (await reply_to(ws, "x3"))["type"] == "refused"
    await ws.disconnect()
    assert await Message.objects.acount() == 2


async def test_invalid_input_is_answered_with_the_field_and_the_limit(live_server, alice, make_conversation, bodies):
    conversation, q, _a = await sync_to_async(seeded)(make_conversation)
    ws = await connect(conversation.pk, alice)
    five = {f"model_{i}": "local/chat" for i in range(1, 6)}
    await ws.send_json_to({"action": "compare", "id": "c5", "content": "hi", **five})
    assert await reply_to(ws, "c5") == {
        "type": "invalid",
        "id": "c5",
        "errors": ["columns: choose 2 to 4 models to compare."],
    }
    await ws.send_json_to({"action": "edit", "id": "e1", "message_id": q.pk, "content": "  "})
    reply = await reply_to(ws, "e1")
    assert reply["type"] == "invalid" and reply["errors"][0].startswith("content:")
    await ws.send_json_to({"action": "regenerate", "id": "r1", "message_id": q.pk})
    assert (await reply_to(ws, "r1"))["errors"] == ["message_id: only an answer can be regenerated."]
    await ws.disconnect()
    assert await Message.objects.acount() == 2 and bodies == []


async def test_switch_over_the_socket_answers_the_thread(live_server, alice, make_conversation):
    conversation, q, a = await sync_to_async(seeded)(make_conversation)
    other = await sync_to_async(branches.add)(conversation, q.pk, role="assistant", content="The Seine.")
    ws = await connect(conversation.pk, alice)
    await ws.send_json_to({"action": "switch", "id": "s1", "message_id": a.pk})
    reply = await reply_to(ws, "s1")
    await ws.disconnect()
    assert reply["type"] == "sent" and reply["message_ids"] == [a.pk]
    assert "The Loire." in reply["thread"] and "The Seine." not in reply["thread"]
    assert not (await Message.objects.aget(pk=other.pk)).selected


async def test_tool_results_over_the_socket_make_the_rows_and_body_of_the_post(
    live_server, alice, async_client, make_conversation, bodies
):
    from tests.chat.test_tools_and_composer import WEATHER, called

    def setup():
        conversation = make_conversation("local/tools", params={"tools": WEATHER})
        return conversation, called(conversation)

    by_post, answer1 = await sync_to_async(setup)()
    by_socket, answer2 = await sync_to_async(setup)()
    await async_client.aforce_login(alice)
    url = reverse("chat:tool_results", args=[by_post.pk, answer1.pk])
    response = await async_client.post(url, {"result:call_a": "18 C"}, headers=HTMX)
    assert response.status_code == 200
    await finish_all(by_post.pk)
    posted = list(bodies)

    ws = await connect(by_socket.pk, alice)
    await ws.send_json_to({"action": "tool_results", "id": "t0", "message_id": answer2.pk, "result:call_a": " "})
    reply = await reply_to(ws, "t0")
    assert reply["type"] == "invalid" and "call_a" in reply["errors"][0] and bodies == posted
    await ws.send_json_to({"action": "tool_results", "id": "t1", "message_id": answer2.pk, "result:call_a": "18 C"})
    reply = await reply_to(ws, "t1")
    await ws.disconnect()
    assert reply["type"] == "sent", reply
    await finish_all(by_socket.pk)

    assert bodies[len(posted) :] == posted and posted
    assert await sync_to_async(shape)(by_socket.pk) == await sync_to_async(shape)(by_post.pk)
    assert reply["html"].count("<article") == response.content.decode().count("<article") == 3
    assert reply["message_ids"][0] == answer2.pk
    assert await Message.objects.filter(conversation=by_socket, role="tool", content="18 C").aexists()
