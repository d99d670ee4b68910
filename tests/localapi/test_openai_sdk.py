"""The official openai SDK, with strict response validation, as a checker of the local API's wire format."""

import json

import openai
import pytest

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


@pytest.fixture
def client(live_server):
    client = openai.OpenAI(
        base_url=live_server.api_url, api_key=live_server.api_key, _strict_response_validation=True, max_retries=0
    )
    yield client
    client.close()


def test_non_streaming_completion_parses(client):
    completion = client.chat.completions.create(
        model="local/chat", messages=[{"role": "user", "content": "what is 12*7+3"}]
    )
    assert "**87**" in completion.choices[0].message.content
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens
    assert completion.usage.prompt_tokens_details.cached_tokens >= 0
    assert completion.usage.completion_tokens_details.reasoning_tokens == 0


def test_streaming_completion_parses(client):
    stream = client.chat.completions.create(
        model="local/chat", messages=[{"role": "user", "content": "list 3 planets"}], stream=True
    )
    parts, finish, usage = [], None, None
    for chunk in stream:
        parts.append(chunk.choices[0].delta.content or "")
        finish = chunk.choices[0].finish_reason or finish
        usage = chunk.usage or usage
    text = "".join(parts)
    assert "1. Mercury\n2. Venus\n3. Earth" in text
    assert finish == "stop"
    assert usage.completion_tokens > 5


def test_reasoning_content_reaches_the_sdk(client):
    completion = client.chat.completions.create(
        model="local/reasoner", messages=[{"role": "user", "content": "what is 3*3"}]
    )
    message = completion.choices[0].message
    assert "3 × 3 = 9" in message.model_extra["reasoning_content"]
    assert completion.usage.completion_tokens_details.reasoning_tokens > 0

    stream = client.chat.completions.create(
        model="local/reasoner", messages=[{"role": "user", "content": "what is 3*3"}], stream=True
    )
    reasoning, content = "", ""
    for chunk in stream:
        delta = chunk.choices[0].delta
        reasoning += (delta.model_extra or {}).get("reasoning_content") or ""
        if delta.content:
            assert reasoning, "content arrived before any reasoning"
        content += delta.content or ""
    assert "3 × 3 = 9" in reasoning
    assert "**9**" in content


def test_tool_calls_reach_the_sdk(client):
    completion = client.chat.completions.create(
        model="local/tools",
        messages=[{"role": "user", "content": "What's the weather in Oslo?"}],
        tools=[WEATHER],
        tool_choice="auto",
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Oslo"}

    stream = client.chat.completions.create(
        model="local/tools",
        messages=[{"role": "user", "content": "What's the weather in Oslo?"}],
        tools=[WEATHER],
        stream=True,
    )
    arguments, name = "", None
    for chunk in stream:
        for call in chunk.choices[0].delta.tool_calls or []:
            name = name or call.function.name
            arguments += call.function.arguments or ""
    assert name == "get_weather"
    assert json.loads(arguments) == {"city": "Oslo"}


def test_errors_become_sdk_exceptions(client):
    with pytest.raises(openai.BadRequestError) as excinfo:
        client.chat.completions.create(model="local/nope", messages=[{"role": "user", "content": "hi"}])
    assert excinfo.value.status_code == 400
    assert excinfo.value.body["code"] == 20012
    bad = openai.OpenAI(base_url=client.base_url, api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.chat.completions.create(model="local/chat", messages=[{"role": "user", "content": "hi"}])
