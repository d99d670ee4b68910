"""The scripted model over real HTTP: `[say:…]`, `[think:…]`, `[call:…]`, `[chunks:N]` in the last user message
and the `X-Local-Script` header, streamed and not, alone and with the fault switch."""

import json

import httpx
import pytest

from tests.localapi.test_chat import GET_WEATHER, answer, chat
from tests.localapi.test_chat_stream import chunks, events, text_of

SAID = "Hello **world**, see [the docs](https://example.com/docs)."


def script_header(**fields) -> dict:
    return {"X-Local-Script": json.dumps(fields)}


def streamed_calls(parsed) -> dict[int, dict]:
    """The tool calls of a stream, put back together by their index."""
    calls: dict[int, dict] = {}
    for chunk in parsed:
        for part in chunk["choices"][0]["delta"].get("tool_calls") or []:
            call = calls.setdefault(part["index"], {"arguments": ""})
            if "id" in part:
                call["id"], call["name"] = part["id"], part["function"]["name"]
            call["arguments"] += part["function"].get("arguments", "")
    return calls


def test_say_is_the_whole_answer_and_the_directive_is_not_echoed(api):
    body = chat(api, f"Tell me about rivers [say:{SAID}]").json()
    choice = body["choices"][0]
    assert choice["message"]["content"] == SAID
    assert choice["finish_reason"] == "stop"
    assert body["usage"]["completion_tokens"] > 0


def test_directives_are_stripped_from_what_the_canned_rules_read(api):
    text = answer(chat(api, "[chunks:2] tell me about rivers"))
    assert "rivers" in text and "[chunks" not in text and "chunks:2" not in text


def test_say_streams_token_by_token_or_in_the_stated_number_of_chunks(api):
    parsed = chunks(events(api, f"[say:{SAID}]"))
    assert text_of(parsed) == SAID
    assert sum(1 for c in parsed if c["choices"][0]["delta"].get("content")) > 10
    parsed = chunks(events(api, f"[say:{SAID}] [chunks:3]"))
    pieces = [c["choices"][0]["delta"]["content"] for c in parsed if c["choices"][0]["delta"].get("content")]
    assert len(pieces) == 3 and "".join(pieces) == SAID
    assert parsed[-1]["choices"][0]["finish_reason"] == "stop"


def test_several_says_are_the_choices_in_turn(api):
    body = chat(api, "[say:first][say:second]", n=3).json()
    assert [c["message"]["content"] for c in body["choices"]] == ["first", "second", "first"]
    parsed = chunks(events(api, "[say:first][say:second]", n=2))
    by_index = {i: text_of([c for c in parsed if c["choices"][0]["index"] == i]) for i in (0, 1)}
    assert by_index == {0: "first", 1: "second"}


def test_stop_and_max_tokens_cut_a_scripted_answer(api):
    response = chat(api, "[say:one two three four five six]", stop=[" four"])
    assert answer(response) == "one two three"
    body = chat(api, "[say:one two three four five six]", max_tokens=2).json()
    assert body["choices"][0]["message"]["content"] == "one two"
    assert body["choices"][0]["finish_reason"] == "length"


def test_json_mode_does_not_wrap_a_scripted_answer(api):
    said = '{"answer": 42}'
    assert answer(chat(api, f"[say:{said}]", response_format={"type": "json_object"})) == said


def test_think_is_the_reasoning_of_a_reasoning_model(api):
    body = chat(api, "[think:Two and two make four.] [say:**4**]", model="local/reasoner").json()
    message = body["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "**4**", "reasoning_content": "Two and two make four."}
    assert body["usage"]["completion_tokens_details"]["reasoning_tokens"] > 0
    off = chat(api, "[think:hidden] [say:ok]", model="local/reasoner", enable_thinking=False).json()
    assert off["choices"][0]["message"]["reasoning_content"] == ""
    assert off["choices"][0]["message"]["content"] == "ok"


def test_think_alone_keeps_the_canned_answer_and_streams_first(api):
    parsed = chunks(events(api, "what is 2+2 [think:Easy.]", model="local/reasoner"))
    assert text_of(parsed, "reasoning_content") == "Easy."
    assert "**4**" in text_of(parsed)
    kinds = ["reasoning" if c["choices"][0]["delta"].get("reasoning_content") else "content" for c in parsed[1:-1]]
    assert kinds[0] == "reasoning" and "reasoning" not in kinds[kinds.index("content") :]


def test_call_states_a_tool_call_and_its_arguments(api):
    content = 'Anything at all [call:get_weather {"city": "Paris", "days": 9}]'
    choice = chat(api, content, model="local/tools", tools=[GET_WEATHER]).json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == ""
    [call] = choice["message"]["tool_calls"]
    assert call["id"].startswith("call_") and call["type"] == "function"
    assert call["function"]["name"] == "get_weather"
    # As stated, even outside the schema's bounds: tests can check how a client copes with that.
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris", "days": 9}


def test_several_calls_are_parallel_calls_streamed_by_index(api):
    content = '[say:Checking both.] [call:get_weather {"city": "Paris"}] [call:get_weather {"city": "Lima"}]'
    body = chat(api, content, model="local/tools", tools=[GET_WEATHER]).json()
    message = body["choices"][0]["message"]
    assert message["content"] == "Checking both."
    assert [json.loads(c["function"]["arguments"])["city"] for c in message["tool_calls"]] == ["Paris", "Lima"]
    assert len({c["id"] for c in message["tool_calls"]}) == 2

    parsed = chunks(events(api, content, model="local/tools", tools=[GET_WEATHER]))
    assert text_of(parsed) == "Checking both."
    calls = streamed_calls(parsed)
    assert [calls[i]["id"] for i in (0, 1)] == [c["id"] for c in message["tool_calls"]]
    assert [json.loads(calls[i]["arguments"]) for i in (0, 1)] == [{"city": "Paris"}, {"city": "Lima"}]
    assert parsed[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_after_the_tool_result_the_scripted_call_is_not_repeated(api):
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    messages = [
        {"role": "user", "content": '[call:get_weather {"city": "Paris"}] [say:It is sunny in Paris.]'},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"condition": "sunny"}'},
    ]
    body = {"model": "local/tools", "messages": messages, "tools": [GET_WEATHER]}
    choice = api.post("/chat/completions", json=body).json()["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["content"] == "It is sunny in Paris."
    assert "tool_calls" not in choice["message"]


@pytest.mark.parametrize(
    ("content", "model", "words"),
    [
        (
            "[call:get_time]",
            "local/tools",
            ["[call:get_time]: get_time is not a tool of this request (tools: get_weather)"],
        ),
        ("[call:get_weather {city}]", "local/tools", ["messages[0].content", "[call:get_weather {city}]", "JSON"]),
        ("[call:get_weather]", "local/chat", ["get_weather", "tools: none"]),
        ("[chunks:0]", "local/chat", ["[chunks:0]", "1 to 100000"]),
    ],
)
def test_a_directive_the_model_cannot_follow_is_a_400_naming_it(api, content, model, words):
    tools = [GET_WEATHER] if model == "local/tools" else None
    response = chat(api, content, model=model, **({"tools": tools} if tools else {}))
    assert response.status_code == 400
    assert response.json()["code"] == 20015
    for word in words:
        assert word in response.json()["message"]


def test_the_header_states_the_script_without_touching_the_user_text(api):
    headers = script_header(say=["Bonjour.", "Salut."], think="Short.")
    body = {"model": "local/reasoner", "messages": [{"role": "user", "content": "quote me"}], "n": 2}
    choices = api.post("/chat/completions", json=body, headers=headers).json()["choices"]
    assert [c["message"]["content"] for c in choices] == ["Bonjour.", "Salut."]
    assert {c["message"]["reasoning_content"] for c in choices} == {"Short."}

    calls = [{"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "call_given"}]
    parsed = chunks(
        events(api, "hi [say:replaced]", "local/tools", headers=script_header(calls=calls, say=""), tools=[GET_WEATHER])
    )
    assert streamed_calls(parsed) == {0: {"id": "call_given", "name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    assert text_of(parsed) == ""


@pytest.mark.parametrize(
    ("header", "words"),
    [
        ("{not json", ["X-Local-Script", "JSON"]),
        ('{"sing": "x"}', ["X-Local-Script.sing", "say, think, calls or chunks"]),
        ('{"say": 3}', ["X-Local-Script.say", "string"]),
        ('{"chunks": "3"}', ["X-Local-Script.chunks"]),
        ('{"calls": [{"arguments": {}}]}', ["X-Local-Script.calls[0].name"]),
    ],
)
def test_a_bad_script_header_is_a_400_naming_the_field(api, header, words):
    body = {"model": "local/chat", "messages": [{"role": "user", "content": "hi"}]}
    response = api.post("/chat/completions", json=body, headers={"X-Local-Script": header})
    assert response.status_code == 400
    for word in words:
        assert word in response.json()["message"]


def test_script_with_drop_after_fault_cuts_the_stated_answer(api):
    body = {
        "model": "local/chat",
        "messages": [{"role": "user", "content": "[say:alpha beta gamma delta] [chunks:4] [fault:drop-after-3]"}],
        "stream": True,
    }
    received = b""
    with pytest.raises(httpx.RemoteProtocolError), api.stream("POST", "/chat/completions", json=body) as response:
        for part in response.iter_raw():
            received += part
    payloads = [p.removeprefix("data: ") for p in received.decode().split("\n\n")[:-1]]
    # The role chunk, then "alpha", " beta": the stream dies before " gamma".
    assert text_of([json.loads(p) for p in payloads]) == "alpha beta"


def test_script_with_malformed_after_fault_and_a_status_fault(api):
    payloads = events(api, "[say:one two three] [fault:malformed-after-2]")
    good, bad_at = [], None
    for payload in payloads[:-1]:
        try:
            good.append(json.loads(payload))
        except ValueError:
            bad_at = len(good)
    assert bad_at == 2 and text_of(good) == "one two three"
    response = chat(api, "[say:never said] [fault:503]")
    assert response.status_code == 503
