"""A member chats through the team key and never receives it; usage is filed from the provider's own figures;
removal, revocation and an exhausted budget stop the member's very next request, in words."""

import json

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from playground.catalog.services import refresh_models
from playground.chat.models import Conversation, Message
from playground.connections.models import Connection
from playground.rerank.models import RerankRun
from playground.teams.models import Membership, UsageRecord
from tests.chat.conftest import connect, finish
from tests.teams.conftest import make_team_connection

pytestmark = pytest.mark.django_db(transaction=True)

HX = {"HX-Request": "true"}


def mint(label: str) -> str:
    """A fresh key of the local API (imported here: with LOCAL_API=off the module is not installed)."""
    from playground.localapi.keys import mint as mint_key

    return mint_key(label)


async def team_setup(team, alice, base_url, key, model_kinds=("chat",)):
    connection = await sync_to_async(make_team_connection)(team, alice, base_url=base_url, key=key)
    message, ok = await refresh_models(connection, connection.owner)
    assert ok, message
    return connection


async def receive_all(ws, message_id, timeout=30):
    """Every frame the websocket receives (raw text) up to the final event of message_id."""
    frames = []
    while True:
        text = await ws.receive_from(timeout=timeout)
        frames.append(text)
        event = json.loads(text)
        if event.get("message_id") == message_id and event["type"] in ("done", "error"):
            return frames


async def send(async_client, conversation, text):
    return await async_client.post(reverse("chat:send", args=[conversation.pk]), {"content": text}, headers=HX)


@pytest.mark.needs_local_api
async def test_a_member_session_uses_the_team_key_and_never_receives_it(live_server, team, alice, bob, async_client):
    key = await sync_to_async(mint)("team key of the test")
    connection = await team_setup(team, alice, live_server.api_url, key)
    await async_client.aforce_login(bob)
    bodies = []

    async def get(url, **kwargs):
        response = await async_client.get(url, **kwargs)
        assert response.status_code in (200, 302), (url, response.status_code)
        bodies.append((url, response.content.decode(errors="replace")))
        return response

    await get(reverse("chat:index"))
    # A bare New chat saves nothing: the conversation is made as the start page's first message would make it.
    conversation = await Conversation.objects.acreate(owner=bob, connection=connection, model_id="local/chat")

    ws = await connect(conversation.pk, bob)
    response = await send(async_client, conversation, "write 40 words about rain")
    assert response.status_code == 200
    bodies.append(("send", response.content.decode()))
    assistant = await Message.objects.aget(conversation=conversation, role="assistant")
    frames = await receive_all(ws, assistant.pk)
    await ws.disconnect()
    message = await finish(assistant.pk)
    assert message.status == "complete" and message.content

    for url in [
        reverse("chat:conversation", args=[conversation.pk]),
        reverse("chat:panel", args=[conversation.pk]) + f"?connection={connection.pk}",
        reverse("chat:request_preview", args=[conversation.pk]) + "?content=hello",
        reverse("sharing:code", args=["conversation", conversation.pk]),
        reverse("sharing:export", args=[conversation.pk, "json"]),
        reverse("sharing:export", args=[conversation.pk, "md"]),
        reverse("sharing:source", args=["conversation", conversation.pk]),
        reverse("connections:index"),
        reverse("teams:index"),
        reverse("teams:detail", args=[team.pk]),
        reverse("catalog:picker") + f"?connection={connection.pk}&kind=chat",
        reverse("rerank:index") + f"?connection={connection.pk}",
        reverse("speech:index"),
        reverse("batches:index"),
    ]:
        await get(url)
    response = await async_client.post(
        reverse("sharing:source", args=["conversation", conversation.pk]), {"visibility": "anyone", "expiry": "1d"}
    )
    share_page = await get(response.url)
    token = share_page.content.decode().split("/s/")[1][:32]
    await get(f"/s/{token}/")

    secrets = [key, key[3:-4], key[-12:]]
    everything = [body for _, body in bodies] + frames
    assert len(frames) >= 3 and len(bodies) >= 18
    for secret in secrets:
        leaks = [url for url, body in bodies if secret in body] + [f for f in frames if secret in f]
        assert not leaks, (secret, leaks[:3])
    assert any("Team gateway (team Research)" in body for body in everything)

    # The usage row is the provider's own usage of that answer.
    row = await UsageRecord.objects.aget(team=team, user=bob)
    assert row.kind == "chat" and row.model == "local/chat" and row.status == "complete"
    usage = message.usage
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert (row.prompt_tokens, row.completion_tokens) == (usage["prompt_tokens"], usage["completion_tokens"])
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    assert row.reasoning_tokens == reasoning


@pytest.mark.needs_local_api
async def test_removal_revocation_and_budget_stop_the_next_request_in_words(
    live_server, team, alice, bob, async_client
):
    key = await sync_to_async(mint)("team key of the test")
    connection = await team_setup(team, alice, live_server.api_url, key)
    conversation = await Conversation.objects.acreate(owner=bob, connection=connection, model_id="local/chat")
    await async_client.aforce_login(bob)

    async def refused(words):
        before = await Message.objects.filter(conversation=conversation).acount()
        response = await send(async_client, conversation, "hello there")
        html = response.content.decode()
        assert words in html, html[:2000]
        assert await Message.objects.filter(conversation=conversation).acount() == before
        return html

    response = await send(async_client, conversation, "write 20 words about snow")
    assistant = await Message.objects.aget(conversation=conversation, role="assistant")
    first = await finish(assistant.pk)
    assert first.status == "complete"

    membership = await Membership.objects.aget(team=team, user=bob)
    await membership.adelete()
    await refused("You are no longer a member of Research")
    await Membership.objects.acreate(team=team, user=bob, role="member")

    await Connection.objects.filter(pk=connection.pk).aupdate(revoked=True)
    await refused("was revoked, so nothing was sent")
    await Connection.objects.filter(pk=connection.pk).aupdate(revoked=False)

    used = first.usage["prompt_tokens"] + first.usage["completion_tokens"]
    await Membership.objects.filter(team=team, user=bob).aupdate(monthly_token_budget=used)
    html = await refused("Your monthly token budget on Research is used up")
    assert f"{used:,} of {used:,} tokens this month" in html
    # A budget above what was used lets the next request through.
    await Membership.objects.filter(team=team, user=bob).aupdate(monthly_token_budget=used + 10_000)
    response = await send(async_client, conversation, "write 10 words about hail")
    assert response.status_code == 200 and 'data-status="streaming"' in response.content.decode()
    second = await Message.objects.filter(conversation=conversation, role="assistant").alast()
    await finish(second.pk)
    assert await UsageRecord.objects.filter(team=team, user=bob).acount() == 2


@pytest.mark.needs_local_api
async def test_retry_and_rerank_are_refused_after_removal_and_rerank_usage_is_filed(
    live_server, team, alice, bob, async_client
):
    key = await sync_to_async(mint)("team key of the test")
    connection = await team_setup(team, alice, live_server.api_url, key)
    await async_client.aforce_login(bob)
    data = {
        "connection": connection.pk,
        "model": "local/reranker",
        "query": "rivers",
        "documents": "a river flows\nmountains are tall\nthe delta of a river",
        "documents_format": "lines",
    }
    response = await async_client.post(reverse("rerank:run"), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    run = await RerankRun.objects.aget(owner=bob)
    row = await UsageRecord.objects.aget(team=team, user=bob, kind="rerank")
    assert row.documents == 3 and row.model == "local/reranker"
    assert row.prompt_tokens == run.meta["tokens"]["input_tokens"]

    conversation = await Conversation.objects.acreate(owner=bob, connection=connection, model_id="local/chat")
    failed = await Message.objects.acreate(conversation=conversation, role="assistant", status="error")
    await Membership.objects.filter(team=team, user=bob).adelete()
    response = await async_client.post(reverse("chat:retry", args=[conversation.pk, failed.pk]), headers=HX)
    assert response.status_code == 403 and "no longer a member of Research" in response.content.decode()
    response = await async_client.post(reverse("rerank:run"), data)
    assert "connection" in response.content.decode() and await RerankRun.objects.filter(owner=bob).acount() == 1


async def test_usage_rows_equal_the_fake_providers_usage(live_server, team, alice, bob, async_client, fake_openai):
    from tests.fakeprovider.server import CHAT_MODEL

    connection = await team_setup(team, alice, fake_openai.base_url, fake_openai.key)
    conversation = await Conversation.objects.acreate(owner=bob, connection=connection, model_id=CHAT_MODEL)
    await async_client.aforce_login(bob)
    response = await send(async_client, conversation, "say something short")
    assert response.status_code == 200
    assistant = await Message.objects.aget(conversation=conversation, role="assistant")
    message = await finish(assistant.pk)
    assert message.status == "complete" and message.usage
    row = await UsageRecord.objects.aget(team=team, user=bob)
    assert (row.prompt_tokens, row.completion_tokens) == (
        message.usage["prompt_tokens"],
        message.usage["completion_tokens"],
    )


@pytest.mark.needs_local_api
def test_a_batch_through_the_team_key_is_filed_with_its_output_files_usage(live_server, team, alice, bob, http_for):
    from asgiref.sync import async_to_sync

    from playground.batches.models import TERMINAL, Batch
    from tests.batches.conftest import HTMX, wait_for_status

    connection = async_to_sync(team_setup)(team, alice, live_server.api_url, mint("team key of the test"))
    http = http_for(bob)
    data = {
        "connection": str(connection.pk),
        "source": "prompts",
        "model": "local/chat",
        "prompts": "Name a colour.\nSay hello.",
        "completion_window": "24h",
        "metadata_key": [""],
        "metadata_value": [""],
    }
    assert "created with 2 requests" in http.post("/batches/new/", data=data, headers=HTMX).text
    batch = Batch.objects.get(owner=bob)
    assert 'data-status="completed"' in wait_for_status(http, batch.pk, TERMINAL)
    output = [json.loads(line) for line in http.get(f"/batches/{batch.pk}/download/output/").text.splitlines()]
    usages = [item["response"]["body"]["usage"] for item in output]
    rows = {row.status: row for row in UsageRecord.objects.filter(team=team, user=bob, kind="batch")}
    assert set(rows) == {"submitted", "completed"} and rows["submitted"].documents == 2
    assert rows["completed"].prompt_tokens == sum(u["prompt_tokens"] for u in usages) > 0
    assert rows["completed"].completion_tokens == sum(u["completion_tokens"] for u in usages) > 0
    assert rows["completed"].model == "local/chat"


@pytest.mark.needs_local_api
async def test_a_clip_through_the_team_key_is_filed_with_its_characters_and_refused_after_revocation(
    live_server, team, alice, bob
):
    from playground.speech import services as speech
    from playground.upstream.errors import UpstreamError

    connection = await team_setup(team, alice, live_server.api_url, await sync_to_async(mint)("team key"))
    text = "[S1] Hello team. [S2] Hello back."
    fields = {"owner": bob, "connection": connection, "model": "local/tts", "text": text, "voice": "local/tts:alex"}
    clip = await speech.wait(await speech.start_clip(**fields))
    assert clip.status == "complete"
    row = await UsageRecord.objects.aget(team=team, user=bob, kind="speech")
    assert row.audio_characters == len(text) and row.status == "complete" and row.model == "local/tts"
    await Connection.objects.filter(pk=connection.pk).aupdate(revoked=True)
    connection.revoked = True
    with pytest.raises(UpstreamError) as refused:
        await speech.start_clip(**fields)
    assert refused.value.status == 403 and "was revoked" in refused.value.message
    shown = refused.value.as_dict()
    assert shown["title"] == "Not sent through the team connection" and not shown["retryable"]
    assert shown["next_step"] == "Choose another connection, or ask an owner or admin of the team."


async def test_the_custom_voices_of_a_team_connection_are_not_changed_by_anyone(team, alice):
    from playground.speech import services as speech
    from playground.upstream.errors import UpstreamError

    connection = await sync_to_async(make_team_connection)(team, alice)
    with pytest.raises(UpstreamError) as refused:
        await speech.delete_voice(connection, alice, "speech:voice:1")
    assert refused.value.status == 403 and refused.value.message == speech.TEAM_VOICES
    with pytest.raises(UpstreamError):
        await speech.upload_voice(connection, alice, audio=b"x", filename="a.wav", custom_name="a", text="a", model="m")
