"""Two daphne processes on one Redis channel layer: a send on one is watched from a tab on the other."""

import asyncio
import json
import os

import httpx
import pytest
import websockets
from django.urls import reverse

from playground.chat.models import Message
from tests.conftest import free_port, start_server, stop_server

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL: two processes share a Redis layer"),
    pytest.mark.skipif(
        "postgres" not in os.environ.get("DATABASE_URL", ""),
        reason="needs DATABASE_URL on PostgreSQL: three processes write the same database",
    ),
]


@pytest.fixture
def second_server(live_server, tmp_path):
    port = free_port()
    log = tmp_path / "second.log"
    process = start_server(port, log)
    yield f"127.0.0.1:{port}"
    stop_server(process)
    if os.environ.get("SHOW_SERVER_LOG"):
        print(log.read_text(errors="replace"))


async def watch(host, cookie, conversation_pk, events, ready):
    async with websockets.connect(
        f"ws://{host}/ws/chat/{conversation_pk}/",
        additional_headers={"Cookie": cookie, "Origin": f"http://{host}"},
    ) as ws:
        # The consumer joins the group before it accepts; a pong shows it is reading frames too.
        await ws.send(json.dumps({"type": "ping"}))
        assert json.loads(await ws.recv())["type"] == "pong"
        ready.set()
        async for raw in ws:
            event = json.loads(raw)
            events.append(event)
            if event["type"] in ("done", "error"):
                return


@pytest.mark.needs_local_api
def test_a_tab_on_another_process_sees_the_whole_answer(live_server, second_server, client, alice, catalog):
    from playground.chat.models import Conversation
    from playground.connections.models import Connection

    conversation = Conversation.objects.create(
        owner=alice, connection=Connection.objects.get(owner=alice, is_local=True), model_id="local/chat"
    )
    client.force_login(alice)
    session = client.cookies["sessionid"].value
    cookie = f"sessionid={session}; csrftoken=abcdefghijklmnopqrstuvwxyz012345"

    async def scenario():
        events, ready = [], asyncio.Event()
        watcher = asyncio.create_task(watch(second_server, cookie, conversation.pk, events, ready))
        await asyncio.wait_for(ready.wait(), 10)
        async with httpx.AsyncClient(base_url=live_server.url) as http:
            response = await http.post(
                reverse("chat:send", args=[conversation.pk]),
                data={"content": "write 300 words about rivers"},
                headers={
                    "Cookie": cookie,
                    "X-CSRFToken": "abcdefghijklmnopqrstuvwxyz012345",
                    "HX-Request": "true",
                    "Referer": live_server.url,
                },
            )
            assert response.status_code == 200, response.text
        await asyncio.wait_for(watcher, 30)
        return events

    events = asyncio.run(scenario())
    message = Message.objects.get(conversation=conversation, role="assistant")
    assert message.status == "complete"
    kinds = [e["type"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "done" and kinds.count("delta") >= 2
    assert "".join(e["text"] for e in events if e["type"] == "delta") == message.content
    assert f'data-message-id="{message.pk}"' in events[-1]["html"]
