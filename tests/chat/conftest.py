"""Fixtures of the chat tests: the seeded catalog, conversations of alice, and websockets to the app."""

import asyncio

import httpx
import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from playground.asgi import application
from playground.chat.models import Conversation, Message
from playground.chat.relay.generation import running
from playground.connections.models import Connection
from tests.factories import add_connection

ORIGIN = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


@pytest.fixture
def make_conversation(alice, catalog):
    def make(model_id="local/chat", *, owner=None, **fields):
        owner = owner or alice
        # Its Local connection, or (LOCAL_API=off) a hosted one for the tests that only need the rows.
        connection = (
            Connection.objects.filter(owner=owner, is_local=True).first()
            or Connection.objects.filter(owner=owner, name="Hosted").first()
            or add_connection(owner)
        )
        return Conversation.objects.create(owner=owner, connection=connection, model_id=model_id, **fields)

    return make


async def connect(conversation_pk, user):
    communicator = WebsocketCommunicator(application, f"/ws/chat/{conversation_pk}/", headers=ORIGIN)
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def receive_until_final(communicator, message_id, timeout=30):
    """Every event for message_id up to and including its done/error event."""
    events = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        event = await communicator.receive_json_from(timeout=max(0.1, deadline - loop.time()))
        if event.get("message_id") != message_id:
            continue
        events.append(event)
        if event["type"] in ("done", "error"):
            return events


async def finish(message_id, timeout=30):
    """Wait for this process's generation of the message to end; returns the saved message."""
    generation = running(message_id)
    if generation is not None:
        await asyncio.wait_for(asyncio.shield(generation.task), timeout)
    return await Message.objects.aget(pk=message_id)


async def stream_statuses(live_server, conversation):
    """The local API's record of the streams of the conversation's key (each key sees only its own)."""
    key = await sync_to_async(conversation.connection.get_key)()
    async with httpx.AsyncClient() as http:
        response = await http.get(f"{live_server.api_url}/debug/streams", headers={"Authorization": f"Bearer {key}"})
    return {record["trace_id"]: record for record in response.json()["recent"]}
