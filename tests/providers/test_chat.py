"""Chat against each provider: a streamed answer, usage, a tool call and an error, as the thread shows them."""

import json

import pytest
from asgiref.sync import sync_to_async

from playground.chat import services
from playground.chat.models import Conversation
from playground.chat.relay.generation import Generation
from playground.upstream.client import Endpoint
from tests.chat.conftest import connect, finish, receive_until_final
from tests.fakeprovider import server as fake
from tests.providers.conftest import fake_connection, fake_provider

pytestmark = pytest.mark.django_db(transaction=True)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def conversation_on(provider, model_id: str, **fields) -> Conversation:
    return Conversation.objects.create(
        owner=provider.connection.owner, connection=provider.connection, model_id=model_id, **fields
    )


def shown_end(event: dict) -> str:
    """The footer an answer's end shows: its article's HTML, or, for a complete answer the tab watched (no article
    in `done`), its rows and trace id as the page lays them out (static/js/chat/articles.js)."""
    if "html" in event:
        return event["html"]
    footer = event["meta"]["footer"] or {"rows": [], "trace_id": ""}
    return "".join(f"<dt>{term}</dt><dd>{value}</dd>" for term, value, _ in footer["rows"]) + footer["trace_id"]


async def answer(provider, model_id: str, text: str, **fields):
    """Send `text` in a new conversation and follow it over a websocket; returns (events, saved message)."""
    conversation = await sync_to_async(conversation_on)(provider, model_id, **fields)
    ws = await connect(conversation.pk, conversation.owner)
    turn = await services.send(conversation, text)
    events = await receive_until_final(ws, turn.assistant.pk)
    await ws.disconnect()
    return events, await finish(turn.assistant.pk)


async def test_a_streamed_answer_arrives_in_deltas_with_its_finish_reason(provider):
    events, message = await answer(provider, provider.chat_model, "write 40 words about rivers")
    deltas = [e for e in events if e["type"] == "delta"]
    assert deltas and "".join(d["text"] for d in deltas) == message.content
    assert message.status == "complete" and message.finish_reason == "stop"
    if provider.fake:
        assert message.content.startswith("Fake provider here. You said: write 40 words about rivers.")
    assert events[-1]["type"] == "done" and "<dt>finish</dt><dd>stop</dd>" in shown_end(events[-1])
    # The provider's id of the request is kept for support lookups: OpenAI-style providers call it x-request-id.
    assert message.trace_id and message.trace_id in shown_end(events[-1])
    if provider.fake:
        assert message.trace_id.startswith("req_")


@pytest.mark.parametrize("provider", [pytest.param("local", marks=pytest.mark.needs_local_api), "fake"], indirect=True)
async def test_a_streamed_answer_shows_its_usage(provider):
    events, message = await answer(provider, provider.chat_model, "say hello")
    assert message.usage["completion_tokens"] > 0 and message.usage["prompt_tokens"] > 0
    assert "<dt>completion</dt>" in shown_end(events[-1]) and "tok/s" in shown_end(events[-1])
    if provider.fake:
        sent = provider.fake.state.bodies("/chat/completions")[-1]
        assert sent["stream_options"] == {"include_usage": True}


async def test_a_tool_call_is_reassembled_and_shown(provider):
    events, message = await answer(
        provider, provider.tools_model, "What is the weather in Paris? Use get_weather.", params={"tools": [WEATHER]}
    )
    assert message.status == "complete" and message.finish_reason == "tool_calls"
    [call] = message.tool_calls
    assert call["id"] and call["type"] == "function" and call["function"]["name"] == "get_weather"
    arguments = json.loads(call["function"]["arguments"])
    assert isinstance(arguments, dict) and arguments
    html = events[-1]["html"]
    assert "Tool calls" in html and '<span class="tool-name mono">get_weather</span>' in html
    # The id of the call is the one of its first fragment, never a later chunk's id.
    if provider.fake:
        assert call["id"].startswith("call_")
    assert message.ttft_ms is not None


async def test_an_answer_without_streaming_carries_its_usage_and_tool_call(provider):
    events, message = await answer(provider, provider.chat_model, "say hello", params={"stream": False})
    assert message.status == "complete" and message.content and message.finish_reason == "stop"
    assert message.usage["completion_tokens"] > 0 and "<dt>completion</dt>" in shown_end(events[-1])
    _, message = await answer(
        provider,
        provider.tools_model,
        "What is the weather in Paris? Use get_weather.",
        params={"stream": False, "tools": [WEATHER]},
    )
    assert message.finish_reason == "tool_calls" and message.tool_calls[0]["function"]["name"] == "get_weather"
    assert message.content == ""


async def test_each_tool_call_keeps_its_own_fragments(live_server, catalog, alice, fake_openai):
    """Two calls in one answer, streamed one after the other, each by its index."""
    connection = (await sync_to_async(fake_provider)(alice, fake_openai)).connection
    second = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}
    conversation = await Conversation.objects.acreate(
        owner=alice, connection=connection, model_id=fake.TOOLS_MODEL, params={"tools": [WEATHER, second]}
    )
    turn = await services.send(conversation, "weather and time")
    message = await finish(turn.assistant.pk)
    names = [call["function"]["name"] for call in message.tool_calls]
    attempts = [json.loads(call["function"]["arguments"])["attempt"] for call in message.tool_calls]
    assert names == ["get_weather", "get_time"] and attempts == [1, 2]
    assert len({call["id"] for call in message.tool_calls}) == 2


async def test_a_rate_limit_is_shown_in_words(provider):
    events, message = await answer(provider, provider.chat_model, provider.rate_limited("hello"))
    assert message.status == "error" and message.error["status"] == 429
    assert message.error["title"] == "Rate limit reached (RPM)"
    assert "requests per minute" in message.error["next_step"] and message.error["retry_after"]
    assert events[-1]["type"] == "error" and "Rate limit reached (RPM)" in events[-1]["html"]
    assert message.error["trace_id"]


async def test_a_wrong_key_is_shown_in_words(live_server, catalog, alice, fake_openai):
    connection = await sync_to_async(fake_connection)(alice, fake_openai, key="sk-wrong")
    conversation = await Conversation.objects.acreate(owner=alice, connection=connection, model_id=fake.CHAT_MODEL)
    turn = await services.send(conversation, "hello")
    message = await finish(turn.assistant.pk)
    assert message.status == "error" and message.error["title"] == "API key rejected"
    assert message.error["message"].startswith("Incorrect API key provided")
    assert "Connections" in message.error["next_step"]


async def test_a_model_the_provider_does_not_serve_gives_its_message(live_server, catalog, alice, fake_openai):
    connection = await sync_to_async(fake_connection)(alice, fake_openai)
    conversation = await Conversation.objects.acreate(owner=alice, connection=connection, model_id="gpt-nope")
    turn = await services.send(conversation, "hello")
    message = await finish(turn.assistant.pk)
    assert message.error["status"] == 404
    assert message.error["message"] == "The model `gpt-nope` does not exist or you do not have access to it."


async def test_usage_in_a_last_chunk_without_choices_is_read(live_server, fake_openai):
    """What the catalog branch's `include_usage` brings back: the parser reads OpenAI's final usage chunk."""
    endpoint = Endpoint(base_url=fake_openai.base_url, api_key=fake_openai.key)
    body = {
        "model": fake.CHAT_MODEL,
        "messages": [{"role": "user", "content": "count to three"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    generation = Generation(endpoint, body)
    await generation._call()
    assert "".join(generation.content).startswith("Fake provider here.")
    assert generation.finish_reason == "stop"
    assert generation.usage["completion_tokens"] == len("".join(generation.content).split())


async def test_an_untouched_panel_sends_only_what_a_request_needs(live_server, catalog, alice, fake_openai):
    """Against a strict OpenAI-style provider, a panel left untouched still gets an answer."""
    fake_openai.state.strict = True
    connection = await sync_to_async(fake_connection)(alice, fake_openai)
    conversation = await Conversation.objects.acreate(owner=alice, connection=connection, model_id=fake.TOOLS_MODEL)
    turn = await services.send(conversation, "hello")
    message = await finish(turn.assistant.pk)
    assert set(fake_openai.state.bodies("/chat/completions")[-1]) == {"model", "messages", "stream", "stream_options"}
    assert message.status == "complete"


async def test_a_provider_refusing_stream_options_still_answers(provider_fake_refusing):
    provider = provider_fake_refusing
    _, message = await answer(provider, provider.chat_model, "hello")
    assert message.status == "complete" and message.content


async def test_a_refused_stream_options_is_remembered(provider_fake_refusing):
    provider = provider_fake_refusing
    await answer(provider, provider.chat_model, "hello")
    _, message = await answer(provider, provider.chat_model, "hello again")
    sent = provider.fake.state.bodies("/chat/completions")
    # The first request tried the option; once refused, it is no longer sent.
    assert "stream_options" in sent[0] and "stream_options" not in sent[-1]
    assert message.status == "complete"


@pytest.fixture
def provider_fake_refusing(live_server, catalog, alice, fake_openai):
    from tests.providers.conftest import fake_provider

    fake_openai.state.reject_stream_options = True
    return fake_provider(alice, fake_openai)
