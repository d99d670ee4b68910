"""The Redis channel layer failing under a live daphne: stopped before a send, killed mid-stream, and 100
streams at once. Each test runs its own redis-server (never the shared one) and kills it itself."""

import asyncio
import os

import httpx
import pytest
from django.urls import reverse

from playground.chat.models import Conversation, Message
from tests.faults.conftest import CSRF, local_conversation, logged_in, needs_redis
from tests.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), needs_redis, pytest.mark.needs_local_api]
STREAMING = Message.STREAMING


def test_with_redis_stopped_send_new_chat_and_retry_say_so_and_save_nothing(alice, servers, own_redis):
    conversation = local_conversation(alice)
    kept = Message.objects.create(
        conversation=conversation, role="assistant", status=Message.INTERRUPTED, content="Half an answer"
    )
    server = servers(REDIS_URL=own_redis.url)
    own_redis.kill()
    with logged_in(alice, server) as http:
        response = http.post(reverse("chat:send", args=[conversation.pk]), data={"content": "hello there"})
        assert response.status_code == 200
        assert response.headers["HX-Retarget"] == "#composer"
        assert "cannot be reached, so nothing was sent or saved" in response.text
        assert ">hello there</textarea>" in response.text  # what was typed is still there

        plain = http.post(
            reverse("chat:send", args=[conversation.pk]), data={"content": "hello"}, headers={"HX-Request": ""}
        )
        assert plain.status_code == 503 and plain.json()["error"]["type"] == "live_unavailable"

        created = http.post(reverse("chat:create"), data={"content": "a new chat"})
        assert "cannot be reached" in created.text

        retried = http.post(reverse("chat:retry", args=[conversation.pk, kept.pk]))
        assert retried.status_code == 503 and "Redis" in retried.text
    assert list(Message.objects.all()) == [kept]
    assert Message.objects.get(pk=kept.pk).content == "Half an answer"
    assert Conversation.objects.filter(owner=alice).count() == 1


def test_redis_killed_mid_stream_leaves_the_answer_whole(alice, servers, own_redis):
    conversation = local_conversation(alice)
    server = servers(REDIS_URL=own_redis.url, LOCAL_API_TOKEN_RATE="200")
    with logged_in(alice, server) as http:
        response = http.post(
            reverse("chat:send", args=[conversation.pk]), data={"content": "write 1500 words about rivers"}
        )
        assert response.status_code == 200, response.text
    answer = Message.objects.get(conversation=conversation, role="assistant")
    wait_for(lambda: Message.objects.get(pk=answer.pk).content, timeout=30, what="a flushed partial answer")
    own_redis.kill()

    final = wait_for(
        lambda: Message.objects.filter(pk=answer.pk).exclude(status=STREAMING).first(),
        timeout=90,
        what="the end of the answer",
    )
    # The upstream did not depend on Redis: the generation ran to its end and saved everything, usage included.
    assert final.status == Message.COMPLETE, final.error
    assert final.finish_reason == "stop" and len(final.content.split()) > 1000
    assert final.usage["completion_tokens"] > 0


@pytest.mark.skipif(
    "postgres" not in os.environ.get("DATABASE_URL", ""), reason="needs PostgreSQL: 100 writers at once"
)
def test_a_hundred_concurrent_streams_all_complete(alice, servers, own_redis):
    count = 100
    conversations = [local_conversation(alice) for _ in range(count)]
    server = servers(
        REDIS_URL=own_redis.url,
        LOCAL_API_TOKEN_RATE="0",
        LOCAL_API_RPM="100000",
        PLAYGROUND_MAX_ANSWERS_PER_USER="1000",  # one user's hundred answers at once
        backlog=1024,
    )
    with logged_in(alice, server) as http:
        cookies = dict(http.cookies)

    async def send_all():
        limits = httpx.Limits(max_connections=count)
        headers = {"X-CSRFToken": CSRF, "HX-Request": "true"}
        async with httpx.AsyncClient(
            base_url=server.url, cookies=cookies, headers=headers, limits=limits, timeout=120
        ) as client:
            sends = [
                client.post(reverse("chat:send", args=[c.pk]), data={"content": "write 40 words about rivers"})
                for c in conversations
            ]
            return await asyncio.gather(*sends, return_exceptions=True)

    responses = asyncio.run(send_all())
    statuses = [getattr(r, "status_code", repr(r)) for r in responses]
    assert statuses == [200] * count

    answers = Message.objects.filter(conversation__in=conversations, role="assistant")
    wait_for(lambda: not answers.filter(status=STREAMING).exists(), timeout=120, what="every answer to end")
    assert answers.count() == count
    assert sorted(answers.values_list("status", flat=True)) == [Message.COMPLETE] * count
    assert all(a.usage and a.content for a in answers)
