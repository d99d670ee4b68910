"""Every failure of the upstream ends in an inline error that names the cause and the next step."""

import pytest
from asgiref.sync import sync_to_async

from playground.chat import services
from playground.connections.models import Connection
from tests.chat.conftest import connect, finish, receive_until_final

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    ("fault", "status", "title", "next_step"),
    [
        ("402", 402, "Account in arrears", "Recharge"),
        ("403", 403, "Permission denied", "verification"),
        ("404", 404, "Not found at the provider", "base URL"),
        ("429-tpm", 429, "Rate limit reached (TPM)", "tokens per minute"),
        ("429-rpd", 429, "Rate limit reached (RPD)", "requests per day"),
        ("500", 500, "internal error", "trace id"),
        ("503", 503, "overloaded", "streaming is advised"),
        ("504", 504, "timed out", "streaming is advised"),
    ],
)
@pytest.mark.needs_local_api
async def test_each_error_status_is_saved_with_its_title_and_next_step(
    live_server, alice, make_conversation, fault, status, title, next_step
):
    conversation = await sync_to_async(make_conversation)()
    turn = await services.send(conversation, f"hello [fault:{fault}]")
    message = await finish(turn.assistant.pk)
    assert message.status == "error"
    assert message.error["status"] == status
    assert title in message.error["title"]
    assert next_step in message.error["next_step"]
    assert message.error["trace_id"]


@pytest.mark.needs_local_api
async def test_a_rate_limit_names_the_limit_type_and_the_retry_delay(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    turn = await services.send(conversation, "hello [fault:429-ipm]")
    events = await receive_until_final(ws, turn.assistant.pk)
    await ws.disconnect()
    message = await finish(turn.assistant.pk)
    assert message.error["limit_type"] == "IPM" and message.error["retry_after"] == 5
    assert "Retry in 5 s" in message.error["next_step"]
    assert events[-1]["type"] == "error"
    assert "Rate limit reached (IPM)" in events[-1]["html"] and 'data-retry-after="5"' in events[-1]["html"]


@pytest.mark.needs_local_api
async def test_a_wrong_key_gives_401_that_points_to_connections(live_server, alice, catalog):
    def make():
        connection = Connection(owner=alice, name="Wrong key", base_url=live_server.api_url)
        connection.set_key("sk-not-the-right-key")
        connection.save()
        return alice.conversations.create(connection=connection, model_id="local/chat")

    conversation = await sync_to_async(make)()
    turn = await services.send(conversation, "hello")
    message = await finish(turn.assistant.pk)
    assert message.error["status"] == 401
    assert message.error["title"] == "API key rejected"
    assert "Connections" in message.error["next_step"]
    assert "sk-not-the-right-key" not in str(message.error)


@pytest.mark.needs_local_api
async def test_an_unknown_model_gives_the_providers_400_message(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)("local/no-such-model")
    turn = await services.send(conversation, "hello")
    message = await finish(turn.assistant.pk)
    assert message.error["status"] == 400 and message.error["code"] == 20012
    assert "model" in message.error["message"]


@pytest.mark.needs_local_api
async def test_a_stream_cut_midway_keeps_the_partial_answer(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    ws = await connect(conversation.pk, alice)
    # The role chunk and two of four chunks arrive; then the connection drops.
    said = "[say:Rivers carve valleys. They carry silt. Deltas grow. Seas rise.]"
    turn = await services.send(conversation, f"{said} [chunks:4] [fault:drop-after-3]")
    events = await receive_until_final(ws, turn.assistant.pk)
    await ws.disconnect()
    message = await finish(turn.assistant.pk)
    assert message.status == "error" and message.error["kind"] == "stream"
    assert message.error["title"] == "The stream was cut off"
    assert message.content == "Rivers carve valleys. They carry silt"
    assert "".join(e["text"] for e in events if e["type"] == "delta") == message.content
    assert events[-1]["type"] == "error" and "The partial answer above is kept" in events[-1]["html"]


@pytest.mark.needs_local_api
async def test_a_malformed_chunk_keeps_what_arrived_before_it(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    turn = await services.send(conversation, "write 300 words about rivers [fault:malformed-after-30]")
    message = await finish(turn.assistant.pk)
    assert message.status == "error" and message.error["kind"] == "stream"
    assert message.content


async def test_an_unreachable_provider_is_a_network_error(alice, catalog, settings):
    settings.ALLOWED_UPSTREAM_HOSTS = ["127.0.0.1"]

    def make():
        connection = Connection(owner=alice, name="Nowhere", base_url="http://127.0.0.1:9/v1")
        connection.set_key("sk-x")
        connection.save()
        return alice.conversations.create(connection=connection, model_id="local/chat")

    conversation = await sync_to_async(make)()
    turn = await services.send(conversation, "hello")
    message = await finish(turn.assistant.pk)
    assert message.error["kind"] == "network"
    assert message.error["title"] == "Cannot reach the provider"
