"""Live follow over a real websocket on daphne: a viewer of a shared conversation sees a new turn stream in,
the owner's "N watching" counts it, and a revoke closes the viewer's socket within a second."""

import asyncio
import json
import os
import time

import httpx
import pytest
import websockets
from django.urls import reverse

from playground.chat.models import Conversation, Message
from playground.connections.models import Connection
from playground.sharing.freeze import freeze
from playground.sharing.models import Share
from tests.conftest import free_port, start_server, stop_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]
CSRF = "abcdefghijklmnopqrstuvwxyz012345"
SECRET = "sk-live-follow-secret-key-999"


def make_live_share(alice, **fields) -> Share:
    hosted = Connection(owner=alice, name="Hidden Gateway Name", base_url="https://hidden.example.net/v1")
    hosted.set_key(SECRET)
    hosted.save()
    conversation = Conversation.objects.create(
        owner=alice, connection=Connection.objects.get(owner=alice, is_local=True), model_id="local/chat"
    )
    share = Share.objects.create(owner=alice, source=conversation, title="t", live=True, **fields)
    freeze(share)
    return share


def owner_cookie(client, user) -> str:
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}; csrftoken={CSRF}"


async def post(base_url: str, path: str, cookie: str, data: dict | None = None) -> httpx.Response:
    async with httpx.AsyncClient(base_url=base_url) as http:
        return await http.post(
            path,
            data=data or {},
            headers={"Cookie": cookie, "X-CSRFToken": CSRF, "HX-Request": "true", "Referer": base_url},
        )


async def follow(share: Share, owner_url: str, viewer_host: str, cookie: str) -> tuple[list[dict], float]:
    """Send a turn as the owner, collect what the anonymous viewer receives, revoke, time the close."""
    events: list[dict] = []
    async with websockets.connect(
        f"ws://{viewer_host}/ws/s/{share.token}/", additional_headers={"Origin": f"http://{viewer_host}"}
    ) as ws:
        await ws.send(json.dumps({"type": "since", "after": 0}))
        # The socket handles frames in order: the answer to one it does not read means "since" was handled.
        await ws.send(json.dumps({"type": "handled?"}))
        assert json.loads(await ws.recv())["type"] == "invalid"
        response = await post(
            owner_url, reverse("chat:send", args=[share.source_id]), cookie, {"content": "rivers, 200 words"}
        )
        assert response.status_code == 200, response.text
        async with asyncio.timeout(30):
            while not events or events[-1]["type"] != "done":
                events.append(json.loads(await ws.recv()))
        async with httpx.AsyncClient(base_url=owner_url) as http:
            watching = await http.get(reverse("sharing:watching", args=[share.source_id]), headers={"Cookie": cookie})
        assert "1 watching" in watching.text
        started = time.monotonic()
        await post(owner_url, reverse("sharing:revoke", args=[share.pk]), cookie)
        async with asyncio.timeout(5):
            try:
                while True:
                    events.append(json.loads(await ws.recv()))
            except websockets.ConnectionClosed as closed:
                elapsed = time.monotonic() - started
                assert closed.rcvd.code == 4404
    return events, elapsed


def check(events: list[dict], share: Share, elapsed: float) -> None:
    answer = Message.objects.get(conversation=share.source, role="assistant")
    user = Message.objects.get(conversation=share.source, role="user")
    kinds = [e["type"] for e in events]
    appended = [e["message_id"] for e in events if e["type"] == "append"]
    assert appended == [user.pk, answer.pk]
    assert "rivers, 200 words" in events[0]["html"]
    assert kinds.count("delta") >= 2 and kinds[-1] == "revoked"
    # The deltas after the snapshot add up to the saved answer: no gap, no duplicate.
    snapshot = next(e for e in events if e["type"] == "snapshot")
    streamed = snapshot["content"] + "".join(e["text"] for e in events if e["type"] == "delta")
    assert streamed == answer.content
    done = next(e for e in events if e["type"] == "done")
    assert f'id="message-{answer.pk}"' in done["html"] and "Request JSON" in done["html"]
    frames = json.dumps(events)
    for secret in (SECRET, "Hidden Gateway Name", "hidden.example.net", "/local/v1"):
        assert secret not in frames
    assert elapsed < 1.0, f"the viewer's socket closed {elapsed:.2f} s after the revoke"


def test_a_viewer_follows_a_new_turn_live_and_revoke_closes_the_socket(live_server, client, alice, catalog):
    share = make_live_share(alice)
    cookie = owner_cookie(client, alice)
    host = live_server.url.removeprefix("http://")
    events, elapsed = asyncio.run(follow(share, live_server.url, host, cookie))
    check(events, share, elapsed)


@pytest.mark.parametrize("case", ["not-live", "signed-in", "expired", "unknown"])
def test_the_live_socket_refuses_links_that_are_not_followable(live_server, client, alice, catalog, case):
    from datetime import timedelta

    from django.utils import timezone

    share = make_live_share(alice)
    token = share.token
    if case == "not-live":
        Share.objects.filter(pk=share.pk).update(live=False)
    elif case == "signed-in":
        Share.objects.filter(pk=share.pk).update(visibility=Share.SIGNED_IN)
    elif case == "expired":
        Share.objects.filter(pk=share.pk).update(expires=timezone.now() - timedelta(seconds=1))
    else:
        token = "B" * 32
    host = live_server.url.removeprefix("http://")

    async def connect() -> int:
        async with websockets.connect(
            f"ws://{host}/ws/s/{token}/", additional_headers={"Origin": f"http://{host}"}
        ) as ws:
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 5)
            return closed.value.rcvd.code

    assert asyncio.run(connect()) == 4404


@pytest.fixture
def second_server(live_server, tmp_path):
    port = free_port()
    process = start_server(port, tmp_path / "second.log")
    yield f"127.0.0.1:{port}"
    stop_server(process)


@pytest.mark.skipif(
    not os.environ.get("REDIS_URL") or "postgres" not in os.environ.get("DATABASE_URL", ""),
    reason="needs REDIS_URL and DATABASE_URL on PostgreSQL: two daphne processes share a layer and a database",
)
def test_a_viewer_on_another_process_follows_live_and_is_closed_by_a_revoke(
    live_server, second_server, client, alice, catalog
):
    share = make_live_share(alice)
    cookie = owner_cookie(client, alice)
    events, elapsed = asyncio.run(follow(share, live_server.url, second_server, cookie))
    check(events, share, elapsed)
