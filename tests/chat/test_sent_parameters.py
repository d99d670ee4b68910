"""What reaches a provider over the wire: only what the user set, top_k by capability, include_usage where the
provider takes it; and the connection's timeouts, which end a generation in words and keep what arrived."""

import pytest
from asgiref.sync import sync_to_async

from playground.catalog.models import CatalogModel
from playground.chat import services
from playground.chat.models import Conversation
from playground.chat.relay.display import render_message
from playground.connections.models import Connection
from tests.catalog.tiny_provider import TinyProvider
from tests.chat.conftest import finish
from tests.factories import add_connection

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def provider(settings):
    settings.ALLOWED_UPSTREAM_HOSTS = ["127.0.0.1"]
    with TinyProvider(["acme/chat"]) as p:
        yield p


@pytest.fixture
def acme(alice, provider):
    connection = add_connection(alice, "Acme", key="sk-acme", url=provider.url)
    CatalogModel.objects.create(connection=connection, scope="connection", model_id="acme/chat")
    return connection


def conversation_on(connection, model_id="acme/chat", **fields):
    return Conversation.objects.create(owner=connection.owner, connection=connection, model_id=model_id, **fields)


async def answer(conversation, text="hello"):
    turn = await services.send(conversation, text)
    return await finish(turn.assistant.pk)


async def test_an_untouched_panel_sends_the_model_the_messages_and_nothing_else(acme, provider):
    conversation = await sync_to_async(conversation_on)(acme)
    message = await answer(conversation)
    assert message.status == "complete", message.error
    assert set(provider.bodies[0]) == {"model", "messages", "stream", "stream_options"}


async def test_top_k_never_reaches_a_model_without_the_capability(acme, provider):
    conversation = await sync_to_async(conversation_on)(acme, params={"top_k": 20, "temperature": 0.3})
    message = await answer(conversation)
    assert message.status == "complete", message.error
    assert "top_k" not in provider.bodies[0] and provider.bodies[0]["temperature"] == 0.3


async def test_include_usage_is_sent_and_the_usage_shown(acme, provider):
    conversation = await sync_to_async(conversation_on)(acme)
    message = await answer(conversation)
    assert provider.bodies[0]["stream_options"] == {"include_usage": True}
    assert message.content == "Hello world" and message.usage["completion_tokens"] == 2
    html = await sync_to_async(render_message)(message)
    assert "<dt>prompt</dt><dd>5</dd>" in html and "<dt>completion</dt><dd>2</dd>" in html


async def test_a_provider_that_rejects_stream_options_gets_a_retry_without_and_the_choice_is_kept(acme, provider):
    provider.reject_stream_options = True
    conversation = await sync_to_async(conversation_on)(acme)
    message = await answer(conversation)
    assert message.status == "complete", message.error
    assert message.content == "Hello world"
    assert "stream_options" in provider.bodies[0] and "stream_options" not in provider.bodies[1]
    await acme.arefresh_from_db()
    assert acme.include_usage is False
    await answer(conversation, "again")
    assert "stream_options" not in provider.bodies[2] and len(provider.bodies) == 3


async def test_a_model_added_by_hand_that_the_provider_rejects_gives_its_error_in_words(acme, provider):
    await CatalogModel.objects.acreate(connection=acme, scope="connection", model_id="acme/nope", added_by_hand=True)
    conversation = await sync_to_async(conversation_on)(acme, model_id="acme/nope")
    message = await answer(conversation)
    assert message.status == "error"
    assert "The model `acme/nope` does not exist" in message.error["message"]
    html = await sync_to_async(render_message)(message)
    assert "does not exist" in html and "Not found at the provider" in html


async def local_conversation(alice, **limits):
    connection = await Connection.objects.aget(owner=alice, is_local=True)
    for name, value in limits.items():
        setattr(connection, name, value)
    await connection.asave()
    return await Conversation.objects.acreate(owner=alice, connection=connection, model_id="local/chat")


@pytest.mark.needs_local_api
async def test_no_first_token_in_time_ends_the_generation_in_words(live_server, alice):
    conversation = await local_conversation(alice, first_token_timeout=1)
    message = await answer(conversation, "[fault:stall-8] hello")
    assert message.status == "error"
    assert message.error["kind"] == "timeout"
    assert message.error["message"].startswith("No first token after 1 s")
    html = await sync_to_async(render_message)(message)
    assert "No first token after 1 s" in html


@pytest.mark.needs_local_api
async def test_a_silent_provider_ends_the_generation_with_the_partial_answer_kept(live_server, alice):
    conversation = await local_conversation(alice, idle_timeout=1)
    message = await answer(conversation, "[fault:idle-after-4-8] write a long answer")
    assert message.status == "error"
    assert message.error["message"].startswith("The provider sent nothing for 1 s")
    assert message.content  # the tokens that arrived before the pause
    html = await sync_to_async(render_message)(message)
    assert "The provider sent nothing for 1 s" in html


async def test_the_request_tab_shows_the_body_that_is_sent(acme, provider):
    params = {"temperature": 0.3, "top_k": 5, "max_tokens": 64, "stop": ["END"]}
    conversation = await sync_to_async(conversation_on)(acme, params=params)
    preview = (await sync_to_async(services.preview_request)(conversation, "hello")).body
    await answer(conversation, "hello")
    assert preview == provider.bodies[0]


@pytest.mark.needs_local_api
async def test_a_non_streamed_request_that_gets_no_answer_in_time_ends_in_words(live_server, alice):
    conversation = await local_conversation(alice, first_token_timeout=1)
    conversation.params = {"stream": False}
    await conversation.asave()
    message = await answer(conversation, "[fault:stall-8] hello")
    assert message.status == "error" and message.error["message"].startswith("No first token after 1 s")
