"""Every websocket reads only text frames holding a small JSON object that names one of its actions; anything
else gets one `invalid` frame in words and the socket stays open (playground/lib/frames.py)."""

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from playground.asgi import application
from playground.chat.models import Conversation
from playground.connections.models import Connection
from playground.sharing.freeze import freeze
from playground.sharing.models import Share
from tests.evaluate.conftest import make_evaluation

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

ORIGIN = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


def socket_paths(alice) -> dict[str, str]:
    """One socket of each consumer, on objects of alice's."""
    connection = Connection.objects.get(owner=alice, is_local=True)
    conversation = Conversation.objects.create(owner=alice, connection=connection, model_id="local/chat")
    share = Share(owner=alice, title="t", source=conversation, live=True)
    share.save()
    freeze(share)
    evaluation = make_evaluation(alice)
    return {
        "chat": f"/ws/chat/{conversation.pk}/",
        "share": f"/ws/s/{share.token}/",
        "evaluate": f"/ws/evaluate/{evaluation.pk}/",
    }


async def open_socket(path, user):
    ws = WebsocketCommunicator(application, path, headers=ORIGIN)
    ws.scope["user"] = user
    connected, _ = await ws.connect()
    assert connected
    return ws


async def still_open(ws) -> None:
    """The socket still answers: an unknown action gets its `invalid` reply with the same id."""
    await ws.send_json_to({"action": "ping-after", "id": "after-1"})
    reply = await ws.receive_json_from(timeout=5)
    assert reply["type"] == "invalid" and reply["id"] == "after-1"


@pytest.mark.parametrize("kind", ["chat", "share", "evaluate"])
async def test_bad_frames_get_an_invalid_reply_in_words_and_the_socket_stays_open(alice, catalog, kind):
    path = (await sync_to_async(socket_paths)(alice))[kind]
    ws = await open_socket(path, alice)

    await ws.send_to(bytes_data=b"\x00\xff binary")
    reply = await ws.receive_json_from(timeout=5)
    assert reply == {
        "type": "invalid",
        "id": None,
        "errors": ["frame: only text frames (JSON objects) are read; a binary frame is ignored."],
    }

    await ws.send_to(text_data="[" * 100_000 + "]" * 100_000)
    reply = await ws.receive_json_from(timeout=5)
    assert reply["type"] == "invalid" and "nested deeper than the limit of 8 levels" in reply["errors"][0]

    await ws.send_to(text_data='{"action": "send", "id": "n1", "content": "a\\u0000b"}')
    reply = await ws.receive_json_from(timeout=5)
    assert reply == {  # the tab waiting on n1 hears back, in the words of the composer's field
        "type": "invalid",
        "id": "n1",
        "errors": ["Message: NUL characters (\\u0000) are not allowed. Nothing was sent; remove them and try again."],
    }

    await ws.send_to(text_data="not json")
    assert (await ws.receive_json_from(timeout=5))["errors"] == ["frame: not valid JSON."]

    await ws.send_json_to({"action": "nuke", "id": "u1"})
    reply = await ws.receive_json_from(timeout=5)
    assert reply["type"] == "invalid" and reply["id"] == "u1"
    assert reply["errors"][0].startswith("action: 'nuke' is not an action of this socket (one of ")

    await still_open(ws)
    await ws.disconnect()


async def test_a_frame_whose_handling_fails_is_answered_failed_once(alice, catalog, monkeypatch):
    from playground.chat import actions

    path = (await sync_to_async(socket_paths)(alice))["chat"]

    async def broken(ctx, frame):
        raise RuntimeError("a bug")

    monkeypatch.setitem(actions.ACTIONS, "send", broken)
    ws = await open_socket(path, alice)
    await ws.send_json_to({"action": "send", "id": "b1", "content": "hello"})
    reply = await ws.receive_json_from(timeout=5)
    assert reply["type"] == "failed" and reply["id"] == "b1"
    assert await ws.receive_nothing(timeout=0.3)
    await still_open(ws)
    await ws.disconnect()
