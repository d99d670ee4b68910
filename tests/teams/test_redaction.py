"""A provider that quotes the API key in an error message: the key (and runs of 8+ of its characters) never reaches
the page, the stored message or the error object."""

import httpx
import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from playground.chat.models import Conversation, Message
from playground.upstream import client
from playground.upstream.errors import UpstreamError
from playground.upstream.redact import FRAGMENT, REDACTED, redact_key
from tests.chat.conftest import finish
from tests.teams.conftest import KEY_MIDDLE, TEAM_KEY
from tests.teams.test_requests import HX, team_setup

pytestmark = pytest.mark.django_db(transaction=True)


def fragments(key: str) -> list[str]:
    return [key[i : i + FRAGMENT] for i in range(len(key) - FRAGMENT + 1)]


def leaks(text: str, key: str = TEAM_KEY) -> list[str]:
    return [piece for piece in fragments(key) if piece in text]


def test_redact_key_hides_the_key_and_its_fragments_and_keeps_the_rest():
    text = f"Incorrect API key provided: {TEAM_KEY}. It starts {TEAM_KEY[:9]}*** and ends …{TEAM_KEY[-8:]}."
    shown = redact_key(text, TEAM_KEY)
    assert leaks(shown) == [] and shown.count(REDACTED) == 3
    assert shown.startswith("Incorrect API key provided: ") and " and ends …" in shown
    assert redact_key("model `sk-other-model-name` not found", TEAM_KEY) == "model `sk-other-model-name` not found"
    assert redact_key("short keys are left alone: abc", "abc") == "short keys are left alone: abc"


async def test_the_upstream_error_of_an_echoing_provider_holds_no_key(fake_openai):
    fake_openai.state.echo_key = True
    # The provider does echo it: without the redaction the message would carry it.
    async with httpx.AsyncClient() as http:
        raw = await http.get(f"{fake_openai.base_url}/models", headers={"Authorization": f"Bearer {TEAM_KEY}"})
    assert raw.status_code == 401 and TEAM_KEY in raw.text and TEAM_KEY[:10] in raw.text
    endpoint = client.Endpoint(fake_openai.base_url, TEAM_KEY, trusted=True)
    for call in (client.models(endpoint), client.chat(endpoint, {"model": "fake-gpt-mini", "messages": []})):
        with pytest.raises(UpstreamError) as caught:
            await call
        error = caught.value
        assert error.status == 401 and REDACTED in error.message
        assert leaks(error.message) == [] and leaks(str(error.as_dict())) == []


async def test_an_error_chunk_in_the_middle_of_a_stream_holds_no_key(fake_openai):
    from tests.fakeprovider.server import CHAT_MODEL

    fake_openai.state.error_mid_stream = True
    endpoint = client.Endpoint(fake_openai.base_url, fake_openai.key, trusted=True)
    body = {"model": CHAT_MODEL, "messages": [{"role": "user", "content": "hi there"}]}
    with pytest.raises(UpstreamError) as caught:
        async with client.chat_stream(endpoint, body) as stream:
            async for _ in stream:
                pass
    error = caught.value
    assert error.message.startswith("Quota check failed for key ") and REDACTED in error.message
    assert leaks(error.message, fake_openai.key) == [] and leaks(str(error.as_dict()), fake_openai.key) == []


async def test_a_member_never_sees_the_team_key_a_provider_echoes(
    live_server, team, alice, bob, async_client, fake_openai
):
    from tests.fakeprovider.server import CHAT_MODEL

    connection = await team_setup(team, alice, fake_openai.base_url, fake_openai.key)
    await sync_to_async(connection.set_key)(TEAM_KEY)  # the team's key is now one the provider refuses, and quotes
    await connection.asave()
    fake_openai.state.echo_key = True
    conversation = await Conversation.objects.acreate(owner=bob, connection=connection, model_id=CHAT_MODEL)
    await async_client.aforce_login(bob)
    response = await async_client.post(reverse("chat:send", args=[conversation.pk]), {"content": "hi"}, headers=HX)
    assert response.status_code == 200
    assistant = await Message.objects.aget(conversation=conversation, role="assistant")
    message = await finish(assistant.pk)
    assert message.status == "error"
    page = (await async_client.get(reverse("chat:conversation", args=[conversation.pk]))).content.decode()
    assert "Incorrect API key provided" in page and REDACTED in page
    assert leaks(page) == [] and KEY_MIDDLE not in page
    assert leaks(str(message.error if hasattr(message, "error") else "") + message.content) == []


async def test_tool_call_echoes_and_errors_are_stored_without_the_key(team, alice, bob):
    from playground.chat.relay.generation import Generation
    from playground.chat.relay.limits import Limits
    from playground.connections import gate
    from tests.teams.conftest import make_team_connection

    connection = await sync_to_async(make_team_connection)(team, alice)
    conversation = await Conversation.objects.acreate(owner=bob, connection=connection, model_id="m")
    answer = await Message.objects.acreate(conversation=conversation, role="assistant", status="streaming")
    ticket = await gate.aopen(connection, bob, "chat")
    generation = Generation(ticket.endpoint, {"model": "m"}, limits=Limits(connection_id=connection.pk, ticket=ticket))
    generation.message_id, generation.conversation_id = answer.pk, conversation.pk
    echo = f'{{"token": "{TEAM_KEY}", "part": "{KEY_MIDDLE}"}}'
    generation.tool_calls = {0: {"id": "c1", "type": "function", "function": {"name": "f", "arguments": echo}}}
    await generation._finish("error", {"title": "Failed", "message": f"bad key {TEAM_KEY[:12]}…"})
    saved = await Message.objects.aget(pk=answer.pk)
    stored = str(saved.tool_calls) + str(saved.error)
    assert not leaks(stored) and REDACTED in saved.tool_calls[0]["function"]["arguments"]
    assert saved.tool_calls[0]["function"]["name"] == "f"
    await ticket.arelease()


async def test_batch_output_and_error_files_are_served_without_the_key(team, alice, bob, monkeypatch):
    from playground.batches import services as batches
    from playground.batches.models import Batch
    from tests.teams.conftest import make_team_connection

    connection = await sync_to_async(make_team_connection)(team, alice)
    batch = await Batch.objects.acreate(
        owner=bob, connection=connection, remote_id="b", input_file_id="f", input_filename="in.jsonl"
    )
    line = f'{{"custom_id": "request-1", "error": {{"message": "key {TEAM_KEY} refused, ends {KEY_MIDDLE[-9:]}"}}}}\n'

    async def file_content(endpoint, file_id):
        assert endpoint.api_key == TEAM_KEY  # the provider gets the key; what it says back loses it
        return client.Result(line.encode(), "", 200, {})

    monkeypatch.setattr(client, "file_content", file_content)
    content = (await batches.file_content(batch, "file_err")).decode()
    assert not leaks(content) and "request-1" in content and REDACTED in content
