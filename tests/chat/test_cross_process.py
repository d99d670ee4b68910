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


async def send(url, cookie, conversation_pk, content):
    async with httpx.AsyncClient(base_url=url) as http:
        response = await http.post(
            reverse("chat:send", args=[conversation_pk]),
            data={"content": content},
            headers={
                "Cookie": cookie,
                "X-CSRFToken": "abcdefghijklmnopqrstuvwxyz012345",
                "HX-Request": "true",
                "Referer": url,
            },
        )
        assert response.status_code == 200, response.text


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
        await send(live_server.url, cookie, conversation.pk, "write 300 words about rivers")
        await asyncio.wait_for(watcher, 30)
        return events

    events = asyncio.run(scenario())
    message = Message.objects.get(conversation=conversation, role="assistant")
    assert message.status == "complete"
    kinds = [e["type"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "done" and kinds.count("delta") >= 2
    assert "".join(e["text"] for e in events if e["type"] == "delta") == message.content
    # The end as data (no article: the tab finishes it itself), across the Redis layer: the last words and footer.
    assert events[-1]["message_id"] == message.pk and "html" not in events[-1]
    shown = "".join(b for e in events if e["type"] == "delta" for b in e["blocks"]) + "".join(events[-1]["last"])
    assert shown == message.html and events[-1]["meta"]["footer"]["rows"]


async def join_mid_answer(host, cookie, conversation_pk, message_id, events):
    """A tab that opens while the answer streams: it asks for it (snapshot) and follows it to its end."""
    async with websockets.connect(
        f"ws://{host}/ws/chat/{conversation_pk}/",
        additional_headers={"Cookie": cookie, "Origin": f"http://{host}"},
    ) as ws:
        await ws.send(json.dumps({"type": "subscribe", "message_id": message_id, "after": 0}))
        async for raw in ws:
            event = json.loads(raw)
            events.append(event)
            if event["type"] in ("done", "error"):
                return


@pytest.mark.needs_local_api
def test_tabs_on_the_other_process_get_every_delta_while_the_generators_own_tabs_keep_theirs_local(
    live_server, second_server, client, alice, catalog
):
    # With a tab on the generator's process, deltas go through Redis only while a tab of the group lives on the
    # other process: one there from the start (first conversation) and one that joins mid-answer when it is the
    # only one there (second) must each get the whole answer.
    from playground.chat.models import Conversation
    from playground.connections.models import Connection

    conversations = [
        Conversation.objects.create(
            owner=alice, connection=Connection.objects.get(owner=alice, is_local=True), model_id="local/chat"
        )
        for _ in range(2)
    ]
    client.force_login(alice)
    cookie = f"sessionid={client.cookies['sessionid'].value}; csrftoken=abcdefghijklmnopqrstuvwxyz012345"
    local_host = live_server.url.removeprefix("http://")

    async def turn(conversation_pk, remote_from_start):
        local, remote, ready = [], [], [asyncio.Event()]
        watchers = [asyncio.create_task(watch(local_host, cookie, conversation_pk, local, ready[0]))]
        if remote_from_start:
            ready.append(asyncio.Event())
            watchers.append(asyncio.create_task(watch(second_server, cookie, conversation_pk, remote, ready[1])))
        await asyncio.wait_for(asyncio.gather(*(r.wait() for r in ready)), 10)
        await send(live_server.url, cookie, conversation_pk, "write 1000 words about rivers")
        if not remote_from_start:
            for _ in range(200):
                if sum(e["type"] == "delta" for e in local) >= 3:
                    break
                await asyncio.sleep(0.05)
            joined = join_mid_answer(second_server, cookie, conversation_pk, local[0]["message_id"], remote)
            await asyncio.wait_for(joined, 60)
        await asyncio.wait_for(asyncio.gather(*watchers), 60)
        return local, remote

    async def scenario():
        return await asyncio.gather(turn(conversations[0].pk, True), turn(conversations[1].pk, False))

    (local, remote), (local_late, late) = asyncio.run(scenario())
    for conversation, tabs in zip(conversations, ((local, remote), (local_late,)), strict=True):
        message = Message.objects.get(conversation=conversation, role="assistant")
        assert message.status == "complete"
        for events in tabs:
            assert events[0]["type"] == "start" and events[-1]["type"] == "done"
            assert "".join(e["text"] for e in events if e["type"] == "delta") == message.content
    assert late[0]["type"] == "snapshot" and late[-1]["type"] == "done", [e["type"] for e in late]
    assert 0 < len(late[0]["content"]) < len(message.content), "the late tab did not join mid-answer"
    assert late[0]["content"] + "".join(e["text"] for e in late if e["type"] == "delta") == message.content


@pytest.mark.needs_local_api
def test_three_tabs_on_the_other_process_make_one_member_of_the_group_and_each_gets_every_delta_once(
    live_server, second_server, client, alice, catalog
):
    # The other process joins the conversation's group once (its inlet, relay/fanout.py), so each event crosses
    # Redis once for its three tabs; it hands each event to every one of them.
    from channels.layers import get_channel_layer

    from playground.chat.models import Conversation
    from playground.chat.relay.publishing import conversation_group
    from playground.connections.models import Connection

    conversation = Conversation.objects.create(
        owner=alice, connection=Connection.objects.get(owner=alice, is_local=True), model_id="local/chat"
    )
    client.force_login(alice)
    cookie = f"sessionid={client.cookies['sessionid'].value}; csrftoken=abcdefghijklmnopqrstuvwxyz012345"

    async def scenario():
        layer, group = get_channel_layer(), conversation_group(conversation.pk)
        tabs, ready = [[], [], []], [asyncio.Event() for _ in range(3)]
        watchers = [
            asyncio.create_task(watch(second_server, cookie, conversation.pk, events, r))
            for events, r in zip(tabs, ready, strict=True)
        ]
        await asyncio.wait_for(asyncio.gather(*(r.wait() for r in ready)), 10)
        key = layer._group_key(group)
        members = await layer.connection(layer.consistent_hash(group)).zrange(key, 0, -1)
        await send(live_server.url, cookie, conversation.pk, "write 300 words about rivers")
        await asyncio.wait_for(asyncio.gather(*watchers), 60)
        return members, tabs

    members, tabs = asyncio.run(scenario())
    assert len(members) == 1, members  # the second process, once for its three tabs
    message = Message.objects.get(conversation=conversation, role="assistant")
    assert message.status == "complete"
    for events in tabs:
        assert events[0]["type"] == "start" and events[-1]["type"] == "done"
        assert "".join(e["text"] for e in events if e["type"] == "delta") == message.content
