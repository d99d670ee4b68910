"""The fake provider speaks OpenAI's dialect: the official SDK, validating strictly, reads everything it sends."""

import json

import httpx
import openai
import pytest

from tests.fakeprovider import server as fake


@pytest.fixture
def sdk(fake_openai):
    with openai.OpenAI(
        base_url=fake_openai.base_url, api_key=fake_openai.key, max_retries=0, _strict_response_validation=True
    ) as client:
        yield client


def test_models_carry_no_capabilities(sdk, fake_openai):
    assert [m.id for m in sdk.models.list()] == fake.MODELS
    raw = httpx.get(f"{fake_openai.base_url}/models", headers={"Authorization": f"Bearer {fake_openai.key}"})
    assert all(set(item) == {"id", "object", "created", "owned_by"} for item in raw.json()["data"])


def test_usage_comes_only_when_asked_in_a_last_chunk_without_choices(sdk):
    messages = [{"role": "user", "content": "hello there"}]
    plain = list(sdk.chat.completions.create(model=fake.CHAT_MODEL, messages=messages, stream=True))
    assert all(chunk.usage is None for chunk in plain)
    assert len({chunk.id for chunk in plain}) == len(plain)
    finish = [c for c in plain if c.choices and c.choices[0].finish_reason]
    assert len(finish) == 1 and finish[0].choices[0].finish_reason == "stop"
    assert finish[0].choices[0].delta.content is None

    counted = list(
        sdk.chat.completions.create(
            model=fake.CHAT_MODEL, messages=messages, stream=True, stream_options={"include_usage": True}
        )
    )
    assert counted[-1].choices == [] and counted[-1].usage.completion_tokens > 0
    assert all(chunk.usage is None for chunk in counted[:-1])


def test_tool_call_arguments_arrive_in_fragments(sdk):
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    chunks = list(
        sdk.chat.completions.create(
            model=fake.TOOLS_MODEL, messages=[{"role": "user", "content": "weather?"}], tools=tools, stream=True
        )
    )
    calls = [call for c in chunks if c.choices for call in c.choices[0].delta.tool_calls or []]
    assert calls[0].id and calls[0].function.name == "get_weather"
    assert len(calls) > 5 and all(call.id is None and call.function.name is None for call in calls[1:])
    assert json.loads("".join(call.function.arguments for call in calls)) == {"query": "weather?", "attempt": 1}


def test_errors_have_openais_shape(sdk, fake_openai):
    fake_openai.state.fail = 429
    with pytest.raises(openai.RateLimitError) as caught:
        sdk.chat.completions.create(model=fake.CHAT_MODEL, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.code == "rate_limit_exceeded" and "RPM" in caught.value.message
    fake_openai.state.fail = None
    fake_openai.state.reject_stream_options = True
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.chat.completions.create(
            model=fake.CHAT_MODEL,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    assert caught.value.param == "stream_options"
    fake_openai.state.reject_stream_options = False
    fake_openai.state.strict = True
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.chat.completions.create(
            model=fake.CHAT_MODEL, messages=[{"role": "user", "content": "hi"}], extra_body={"top_k": 50}
        )
    assert caught.value.param == "top_k" and "top_k" in caught.value.message
    wrong = httpx.get(f"{fake_openai.base_url}/models", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "invalid_api_key"


def test_rerank_and_speech(fake_openai):
    headers = {"Authorization": f"Bearer {fake_openai.key}"}
    body = {"model": fake.RERANK_MODEL, "query": "paris", "documents": ["bananas", "paris is in france"]}
    ranked = httpx.post(f"{fake_openai.base_url}/rerank", json=body, headers=headers).json()
    assert [r["index"] for r in ranked["results"]] == [1, 0] and "document" not in ranked["results"][0]
    speech = {"model": fake.SPEECH_MODEL, "input": "[S1] hi", "voice": "x", "response_format": "wav"}
    audio = httpx.post(f"{fake_openai.base_url}/audio/speech", json=speech, headers=headers)
    assert audio.headers["transfer-encoding"] == "chunked" and audio.content.startswith(b"RIFF")
