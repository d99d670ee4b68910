"""A socket that goes while its frames are being answered is a normal event (issue 37, item 15): the replies to a
closed socket are dropped, with no traceback in the server's log."""

import asyncio
import json

import pytest
import websockets
from django.test import Client

from playground.chat.models import Conversation
from playground.connections.models import ensure_local_connection
from tests.conftest import free_port, start_server, stop_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spawns, pytest.mark.needs_local_api]

BURST = 400


@pytest.fixture
def server(tmp_path):
    port = free_port()
    log = tmp_path / "server.log"
    process = start_server(port, log)
    yield f"127.0.0.1:{port}", log
    stop_server(process)


async def burst_then_close(host, cookie, path):
    async with websockets.connect(
        f"ws://{host}{path}", additional_headers={"Cookie": cookie, "Origin": f"http://{host}"}
    ) as ws:
        await ws.send(json.dumps({"type": "ping"}))
        assert json.loads(await ws.recv())["type"] == "pong"
        for number in range(BURST):
            await ws.send(f"{{not json {number}")
        # Closed at once: most of the burst is still to be answered.


def test_replies_to_a_socket_closed_during_malformed_frames_leave_no_traceback(server, alice, catalog):
    host, log = server
    conversation = Conversation.objects.create(
        owner=alice, connection=ensure_local_connection(alice), model_id="local/chat"
    )
    client = Client()
    client.force_login(alice)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    for _ in range(3):
        asyncio.run(burst_then_close(host, cookie, f"/ws/chat/{conversation.pk}/"))
    # The server is still well, and has answered everything it was going to.
    asyncio.run(asyncio.sleep(2))
    text = log.read_text(errors="replace")
    assert "Disconnected" not in text and "Traceback" not in text, text[-3000:]
