"""A tab that reconnects after the generator's process died: its answer turns interrupted at once, not after the
heartbeat sweep (set to ten minutes here, so only the snapshot request can end it), keeping its token counts.
With Redis, a generation alive on another process answers the request and is left running."""

import asyncio
import json
import time

import pytest
import websockets
from django.urls import reverse

from playground.chat.models import Message
from tests.faults.conftest import CSRF, local_conversation, logged_in, needs_redis
from tests.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

NO_SWEEP = {"PLAYGROUND_STALE_SECONDS": "600"}


async def subscribe(server, cookie: str, conversation_pk: int, message_id: int, until: float) -> list[dict]:
    """Open a tab's websocket, ask for the message as a reconnecting tab does; the frames until it ends."""
    host = f"127.0.0.1:{server.port}"
    frames = []
    async with websockets.connect(
        f"ws://{host}/ws/chat/{conversation_pk}/",
        additional_headers={"Cookie": cookie, "Origin": f"http://{host}"},
    ) as ws:
        await ws.send(json.dumps({"type": "subscribe", "message_id": message_id, "after": 0}))
        while time.monotonic() < until:
            try:
                frame = json.loads(await asyncio.wait_for(ws.recv(), until - time.monotonic()))
            except TimeoutError:
                break
            if frame.get("message_id") != message_id:
                continue
            frames.append(frame)
            if frame["type"] in ("done", "error"):
                break
    return frames


def start_long_answer(alice, server):
    conversation = local_conversation(alice)
    with logged_in(alice, server) as http:
        response = http.post(reverse("chat:send", args=[conversation.pk]), data={"content": "write 3000 words"})
        assert response.status_code == 200, response.text
        cookie = f"sessionid={http.cookies['sessionid']}; csrftoken={CSRF}"
    answer = Message.objects.get(conversation=conversation, role="assistant")
    wait_for(lambda: Message.objects.get(pk=answer.pk).content, timeout=30, what="a flushed partial answer")
    return conversation, answer, cookie


def test_a_tab_reconnecting_after_the_generator_died_sees_it_interrupted_within_2_s(alice, servers):
    first = servers(LOCAL_API_TOKEN_RATE="50", **NO_SWEEP)
    conversation, answer, cookie = start_long_answer(alice, first)
    first.kill()
    assert Message.objects.get(pk=answer.pk).status == Message.STREAMING

    second = servers(**NO_SWEEP)
    started = time.monotonic()
    frames = asyncio.run(subscribe(second, cookie, conversation.pk, answer.pk, started + 10))
    elapsed = time.monotonic() - started
    assert frames and frames[-1]["type"] == "done", frames
    assert frames[-1]["status"] == Message.INTERRUPTED
    assert 'data-status="interrupted"' in frames[-1]["html"]
    assert elapsed < 2.0, f"interrupted {elapsed:.2f} s after the reconnect"
    ended = Message.objects.get(pk=answer.pk)
    assert ended.status == Message.INTERRUPTED and ended.content
    # The dead process had flushed an estimate of its token counts along with the text: they are kept.
    assert ended.usage["estimated"] is True and ended.completion_tokens > 0
    assert "≈" in frames[-1]["html"]


@needs_redis
def test_a_generation_alive_on_another_process_answers_and_keeps_running(alice, servers):
    first = servers(LOCAL_API_TOKEN_RATE="50", **NO_SWEEP)
    second = servers(**NO_SWEEP)
    conversation, answer, cookie = start_long_answer(alice, first)
    frames = asyncio.run(subscribe(second, cookie, conversation.pk, answer.pk, time.monotonic() + 4))
    assert frames[0]["type"] == "snapshot" and frames[0]["content"]
    assert any(frame["type"] == "delta" for frame in frames)
    assert Message.objects.get(pk=answer.pk).status == Message.STREAMING
    with logged_in(alice, first) as http:
        http.post(reverse("chat:stop", args=[conversation.pk, answer.pk]))
    stopped = wait_for(
        lambda: Message.objects.filter(pk=answer.pk).exclude(status=Message.STREAMING).first(),
        timeout=30,
        what="the stop",
    )
    assert stopped.status == Message.STOPPED
    # A stopped stream never got the provider's usage: its token counts are estimated, not lost.
    assert stopped.usage["estimated"] is True and stopped.completion_tokens > 0
