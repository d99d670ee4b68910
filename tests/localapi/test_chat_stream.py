"""Streaming chat completions over real HTTP: SSE framing (spec 6), order of reasoning and content,
tool-call chunks, the stream faults, and client disconnects seen by the server."""

import json
import time

import httpx
import pytest

from tests.waiting import wait_for


def events(api, content="hello", model="local/chat", headers=None, **fields):
    """The raw data payloads of a stream, in order."""
    body = {"model": model, "messages": [{"role": "user", "content": content}], "stream": True, **fields}
    with api.stream("POST", "/chat/completions", json=body, headers=headers or {}) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        raw = response.read().decode()
    assert raw.endswith("\n\n")
    blocks = raw.split("\n\n")[:-1]
    assert all(block.startswith("data: ") for block in blocks)
    return [block.removeprefix("data: ") for block in blocks]


def chunks(payloads):
    assert payloads[-1] == "[DONE]"
    return [json.loads(p) for p in payloads[:-1]]


def text_of(parsed, field="content"):
    return "".join(c["choices"][0]["delta"].get(field) or "" for c in parsed)


def test_stream_framing_first_chunk_null_finish_reason_and_done(api):
    parsed = chunks(events(api, "write 50 words about rivers"))
    assert parsed[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    for chunk in parsed:
        assert chunk["object"] == "chat.completion.chunk"
        assert chunk["model"] == "local/chat"
        assert isinstance(chunk["system_fingerprint"], str)
        assert chunk["id"] == parsed[0]["id"]
    assert all(c["choices"][0]["finish_reason"] is None for c in parsed[:-1])
    assert all(c["usage"] is None for c in parsed[:-1])
    assert parsed[-1]["choices"][0]["finish_reason"] == "stop"
    usage = parsed[-1]["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert len(parsed) > 40


def test_streamed_text_equals_the_non_streamed_answer(api):
    streamed = text_of(chunks(events(api, "list 4 planets", seed=3)))
    body = {"model": "local/chat", "messages": [{"role": "user", "content": "list 4 planets"}], "seed": 3}
    assert api.post("/chat/completions", json=body).json()["choices"][0]["message"]["content"] == streamed


def test_reasoning_is_streamed_before_content(api):
    parsed = chunks(events(api, "what is 2+2", model="local/reasoner"))
    kinds = []
    for chunk in parsed[1:-1]:
        delta = chunk["choices"][0]["delta"]
        kinds.append("reasoning" if delta.get("reasoning_content") else "content")
    assert kinds[0] == "reasoning"
    assert "reasoning" not in kinds[kinds.index("content") :]
    assert "**4**" in text_of(parsed)
    assert parsed[-1]["usage"]["completion_tokens_details"]["reasoning_tokens"] > 0


def test_stop_and_max_tokens_apply_to_streams(api):
    parsed = chunks(events(api, "[say:apple banana cherry mango]", stop=["cherry"]))
    assert text_of(parsed) == "apple banana "
    parsed = chunks(events(api, "[say:Clouds drift over the hills, grey and slow, all day long.]", max_tokens=7))
    assert parsed[-1]["choices"][0]["finish_reason"] == "length"
    assert sum(1 for c in parsed if c["choices"][0]["delta"].get("content")) == 7
    assert text_of(parsed) == "Clouds drift over the hills, grey"


def test_n_streams_every_choice_with_its_index(api):
    parsed = chunks(events(api, "hello", n=2))
    indexes = {c["choices"][0]["index"] for c in parsed}
    assert indexes == {0, 1}
    finishes = [c for c in parsed if c["choices"][0]["finish_reason"]]
    assert [c["choices"][0]["index"] for c in finishes] == [0, 1]
    assert parsed[-1]["usage"] is not None


def test_tool_calls_stream_in_openai_chunk_format(api):
    tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
    content = 'What\'s the weather in Lima? [call:get_weather {"city": "Lima"}]'
    parsed = chunks(events(api, content, model="local/tools", tools=[tool]))
    calls = [c["choices"][0]["delta"]["tool_calls"] for c in parsed if c["choices"][0]["delta"].get("tool_calls")]
    assert calls[0][0]["id"].startswith("call_")
    assert calls[0][0]["function"]["name"] == "get_weather"
    assert all(call[0]["index"] == 0 for call in calls)
    arguments = "".join(call[0]["function"].get("arguments", "") for call in calls)
    assert json.loads(arguments) == {"city": "Lima"}
    assert parsed[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_drop_after_fault_drops_the_connection_after_n_chunks(api):
    body = {"model": "local/chat", "messages": [{"role": "user", "content": "write 100 words about sand"}]}
    received = b""
    with (
        pytest.raises(httpx.RemoteProtocolError),
        api.stream(
            "POST", "/chat/completions", json={**body, "stream": True}, headers={"X-Local-Fault": "drop-after-5"}
        ) as response,
    ):
        for part in response.iter_raw():
            received += part
    payloads = received.decode().split("\n\n")[:-1]
    assert len(payloads) == 5
    assert "data: [DONE]" not in payloads


def test_malformed_after_fault_sends_one_unparseable_chunk(api):
    payloads = events(api, "[fault:malformed-after-3] hello")
    assert payloads[-1] == "[DONE]"
    bad = []
    for payload in payloads[:-1]:
        try:
            json.loads(payload)
        except ValueError:
            bad.append(payload)
    assert len(bad) == 1
    assert payloads.index(bad[0]) == 3


def test_stall_fault_delays_the_first_token(api):
    started = time.monotonic()
    events(api, "hi", headers={"X-Local-Fault": "stall-1"})
    assert time.monotonic() - started >= 1.0


def test_token_rate_header_paces_the_stream(api):
    started = time.monotonic()
    parsed = chunks(events(api, "write 30 words about wind", headers={"X-Local-Token-Rate": "100"}))
    tokens = len(parsed) - 2
    assert time.monotonic() - started >= tokens / 100 * 0.9


def test_client_disconnect_mid_stream_is_seen_as_cancelled(api):
    body = {"model": "local/chat", "messages": [{"role": "user", "content": "write 2000 words about the sea"}]}
    body["stream"] = True
    with api.stream("POST", "/chat/completions", json=body, headers={"X-Local-Token-Rate": "50"}) as response:
        trace_id = response.headers["x-service-trace-id"]
        for received, _ in enumerate(response.iter_lines(), 1):
            if received >= 10:
                break
    # Leaving the block closed the connection while the server still had ~2500 chunks to send.

    def ended():
        record = next(r for r in api.get("/debug/streams").json()["recent"] if r["trace_id"] == trace_id)
        return record if record["status"] != "streaming" else None

    record = wait_for(ended, timeout=10, what="the stream to end")
    assert record["status"] == "cancelled"
    assert record["chunks_sent"] < 200
    time.sleep(0.5)
    recent = api.get("/debug/streams").json()["recent"]
    assert next(r for r in recent if r["trace_id"] == trace_id)["chunks_sent"] == record["chunks_sent"]


def test_completed_streams_are_recorded(api):
    before = api.get("/debug/streams").json()["completed"]
    events(api, "hello")
    snapshot = api.get("/debug/streams").json()
    assert snapshot["completed"] == before + 1
    assert snapshot["recent"][0]["status"] == "completed"
    assert snapshot["recent"][0]["chunks_sent"] > 3
