"""POST /local/v1/chat/completions without streaming: validation (spec 2.1-2.4, 8) and generation rules."""

import json
import re

import pytest

GET_WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7},
            },
            "required": ["city"],
        },
    },
}


def chat(api, content="hello", model="local/chat", **fields):
    body = {"model": model, "messages": [{"role": "user", "content": content}], **fields}
    return api.post("/chat/completions", json=body)


def answer(response) -> str:
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["message"]["content"]


def tools_body(n: int, name: str = "fn"):
    return [{"type": "function", "function": {"name": f"{name}{i}"}} for i in range(n)]


INVALID = [
    # (fields merged into a valid body, code, words the message must contain)
    ({"model": None}, 20015, ["model", "required"]),
    ({"model": "local/nope"}, 20012, ["model", "local/nope"]),
    ({"model": "local/tts"}, 20012, ["model"]),
    ({"messages": []}, 20015, ["messages", "1 to 10"]),
    ({"messages": [{"role": "user", "content": "hi"}] * 11}, 20015, ["messages", "1 to 10", "11"]),
    ({"messages": [{"role": "robot", "content": "hi"}]}, 20015, ["messages[0].role", "user", "assistant", "system"]),
    ({"messages": [{"role": "tool", "content": "hi"}]}, 20015, ["messages[0].role"]),
    ({"messages": [{"role": "user"}]}, 20015, ["messages[0].content"]),
    ({"messages": [{"role": "user", "content": 42}]}, 20015, ["messages[0].content"]),
    ({"stop": ["a", "b", "c", "d", "e"]}, 20015, ["stop", "4"]),
    ({"stop": 7}, 20015, ["stop"]),
    ({"max_tokens": 0}, 20015, ["max_tokens"]),
    ({"max_tokens": "ten"}, 20015, ["max_tokens", "integer"]),
    ({"max_tokens": 100000}, 20015, ["max_tokens", "8192"]),
    ({"temperature": 2.5}, 20015, ["temperature", "2"]),
    ({"top_p": 0}, 20015, ["top_p", "(0, 1]"]),
    ({"top_p": 1.5}, 20015, ["top_p"]),
    ({"top_k": 500}, 20015, ["top_k", "100"]),
    ({"frequency_penalty": 3}, 20015, ["frequency_penalty", "[-2, 2]"]),
    ({"n": 0}, 20015, ["n", "1"]),
    ({"n": 9}, 20015, ["n", "8"]),
    ({"seed": "abc"}, 20015, ["seed", "integer"]),
    ({"stream": "yes"}, 20015, ["stream", "boolean"]),
    ({"response_format": {"type": "xml"}}, 20015, ["response_format.type", "json_object"]),
    ({"response_format": "json"}, 20015, ["response_format"]),
    # Parameters the chosen model does not support.
    ({"thinking_budget": 1024}, 20016, ["thinking_budget", "local/chat"]),
    ({"enable_thinking": True}, 20016, ["enable_thinking", "local/chat"]),
    ({"reasoning_effort": "high"}, 20016, ["reasoning_effort", "local/chat"]),
    ({"min_p": 0.1}, 20016, ["min_p", "local/chat"]),
    ({"tools": [GET_WEATHER]}, 20016, ["tools", "local/chat"]),
    ({"model": "local/reasoner", "reasoning_effort": "high"}, 20016, ["reasoning_effort", "local/reasoner"]),
    ({"model": "local/vision", "tools": [GET_WEATHER]}, 20016, ["tools", "local/vision"]),
    # Bounds of model-specific parameters.
    ({"model": "local/reasoner", "thinking_budget": 127}, 20015, ["thinking_budget", "128", "32768"]),
    ({"model": "local/reasoner", "thinking_budget": 32769}, 20015, ["thinking_budget", "32768"]),
    ({"model": "local/reasoner", "enable_thinking": "on"}, 20015, ["enable_thinking", "boolean"]),
    ({"model": "local/reasoner-effort", "reasoning_effort": "extreme"}, 20015, ["reasoning_effort", "high", "max"]),
    ({"model": "local/minp", "min_p": 1.5}, 20015, ["min_p", "[0, 1]"]),
    ({"model": "local/minp", "min_p": -0.1}, 20015, ["min_p"]),
    ({"model": "local/tools", "tools": tools_body(129)}, 20015, ["tools", "128"]),
    ({"model": "local/tools", "tools": [{"type": "retrieval"}]}, 20015, ["tools[0].type", "function"]),
    (
        {"model": "local/tools", "tools": [{"type": "function", "function": {"name": "bad name!"}}]},
        20015,
        ["tools[0].function.name", "64"],
    ),
    (
        {"model": "local/tools", "tools": [{"type": "function", "function": {"name": "x" * 65}}]},
        20015,
        ["tools[0].function.name", "64"],
    ),
    (
        {
            "model": "local/tools",
            "tools": [GET_WEATHER],
            "tool_choice": {"type": "function", "function": {"name": "nope"}},
        },
        20015,
        ["tool_choice"],
    ),
    ({"model": "local/tools", "tools": [GET_WEATHER], "tool_choice": "sometimes"}, 20015, ["tool_choice"]),
]


@pytest.mark.parametrize(("fields", "code", "words"), INVALID)
def test_invalid_requests_get_400_naming_the_field_and_limit(api, fields, code, words):
    body = {"model": "local/chat", "messages": [{"role": "user", "content": "hello"}], **fields}
    body = {k: v for k, v in body.items() if v is not None}
    response = api.post("/chat/completions", json=body)
    assert response.status_code == 400
    error = response.json()
    assert set(error) == {"code", "message", "data"}
    assert error["code"] == code
    assert error["data"] is None
    for word in words:
        assert word in error["message"]


def test_body_that_is_not_json_gets_400(api):
    response = api.post("/chat/completions", content=b"{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["message"].startswith("body:")


def test_input_plus_max_tokens_over_the_context_window_names_both_numbers(api):
    long_text = "word " * 30000
    response = chat(api, long_text, max_tokens=8000)
    assert response.status_code == 400
    message = response.json()["message"]
    assert "max_tokens" in message
    assert "8000" in message
    assert "32768" in message
    assert re.search(r"input tokens \(\d{5}\)", message)


def test_reasoning_effort_low_and_medium_map_to_high_and_xhigh_to_max(api):
    for effort in ("low", "medium", "high", "xhigh", "max"):
        response = chat(api, "why is the sky blue", model="local/reasoner-effort", reasoning_effort=effort)
        assert response.status_code == 200, (effort, response.text)
    short = chat(api, "why is the sky blue", model="local/reasoner-effort", reasoning_effort="low").json()
    long = chat(api, "why is the sky blue", model="local/reasoner-effort", reasoning_effort="xhigh").json()
    assert len(long["choices"][0]["message"]["reasoning_content"]) > len(
        short["choices"][0]["message"]["reasoning_content"]
    )


def test_tool_choice_auto_and_none_are_accepted(api):
    assert chat(api, model="local/tools", tools=[GET_WEATHER], tool_choice="auto").status_code == 200
    none = chat(api, "weather in Paris?", model="local/tools", tools=[GET_WEATHER], tool_choice="none").json()
    assert none["choices"][0]["finish_reason"] == "stop"
    assert "tool_calls" not in none["choices"][0]["message"]


def test_response_shape_and_defaults(api):
    response = chat(api, "hello")
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["id"].startswith("chatcmpl-")
    assert body["model"] == "local/chat"
    assert isinstance(body["created"], int)
    assert isinstance(body["system_fingerprint"], str)
    assert len(body["choices"]) == 1
    choice = body["choices"][0]
    assert choice["index"] == 0
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["role"] == "assistant"
    assert "local demo model" in choice["message"]["content"]
    usage = body["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["completion_tokens_details"] == {"reasoning_tokens": 0}
    assert usage["prompt_tokens_details"]["cached_tokens"] >= 0


def test_each_success_carries_a_unique_trace_id_and_cache_control(api):
    ids = set()
    for _ in range(3):
        response = chat(api, "hello")
        assert response.headers["cache-control"] == "no-cache, no-store"
        ids.add(response.headers["x-service-trace-id"])
    assert len(ids) == 3


def test_arithmetic_is_evaluated(api):
    assert "**87**" in answer(chat(api, "what is 12*7+3"))
    assert "**2.5**" in answer(chat(api, "calculate (1+4)/2"))


def test_counts_words_of_the_quoted_text(api):
    text = answer(chat(api, 'How many words are in "the quick brown fox jumps"?'))
    assert "**5 words**" in text


def test_counts_characters(api):
    text = answer(chat(api, "count the characters: abcdef"))
    assert "**6 characters**" in text


def test_quotes_the_previous_message(api):
    messages = [
        {"role": "user", "content": "Rivers run to the sea."},
        {"role": "assistant", "content": "Indeed."},
        {"role": "user", "content": "quote me"},
    ]
    text = answer(api.post("/chat/completions", json={"model": "local/chat", "messages": messages}))
    assert "> Indeed." in text or "> Rivers run to the sea." in text


def test_list_has_the_requested_number_of_items(api):
    text = answer(chat(api, "list 7 animals"))
    assert re.findall(r"^\d+\. ", text, re.M) == [f"{i}. " for i in range(1, 8)]


def test_table_is_markdown(api):
    text = answer(chat(api, "write a table of planets"))
    assert "| # | Item |" in text
    assert "| 1 | Mercury |" in text


def test_code_is_fenced(api):
    text = answer(chat(api, "write python code to count words"))
    assert "```python\n" in text
    assert text.rstrip().endswith("```")


def test_long_answer_has_about_the_requested_number_of_words(api):
    text = answer(chat(api, "write 800 words about rivers"))
    n_words = len(re.findall(r"\w+", text))
    assert 780 <= n_words <= 900
    assert "## " in text


FRUITS = "[say:1. apple\n2. banana\n3. cherry\n4. mango]"


def test_stop_sequence_never_appears_in_the_text(api):
    response = chat(api, FRUITS, stop=["cherry", "kiwi"])
    assert answer(response) == "1. apple\n2. banana\n3. "
    assert response.json()["choices"][0]["finish_reason"] == "stop"


def test_stop_accepts_a_single_string_and_null(api):
    assert answer(chat(api, FRUITS, stop="banana")) == "1. apple\n2. "
    assert answer(chat(api, FRUITS, stop=None)) == "1. apple\n2. banana\n3. cherry\n4. mango"


def test_an_empty_stop_array_is_refused_on_text_models(api):
    response = chat(api, FRUITS, stop=[])
    assert response.status_code == 400
    assert response.json()["message"].startswith("stop: ")
    assert "1 to 4 strings" in response.json()["message"]


def test_an_empty_stop_array_is_the_multimodal_default(api):
    body = {"model": "local/vision", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    assert api.post("/chat/completions", json={**body, "stop": []}).status_code == 200


def test_max_tokens_cuts_the_answer_with_finish_reason_length(api):
    response = chat(api, "[say:Trees grow slowly, and their rings record every dry summer.]", max_tokens=5)
    body = response.json()
    assert body["choices"][0]["message"]["content"] == "Trees grow slowly, and"
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 5


def test_n_gives_distinct_choices(api):
    body = chat(api, "tell me about rivers", n=4).json()
    contents = [c["message"]["content"] for c in body["choices"]]
    assert [c["index"] for c in body["choices"]] == [0, 1, 2, 3]
    assert len(set(contents)) == 4


def test_same_seed_gives_the_same_answer_and_seeds_vary_it(api):
    first = answer(chat(api, "write 100 words about mountains", seed=42))
    assert answer(chat(api, "write 100 words about mountains", seed=42)) == first
    others = {answer(chat(api, "write 100 words about mountains", seed=seed)) for seed in range(1, 6)}
    assert len(others | {first}) > 1


def test_identical_inputs_without_seed_are_deterministic(api):
    assert answer(chat(api, "tell me about lakes")) == answer(chat(api, "tell me about lakes"))


def test_json_object_format_gives_valid_json(api):
    text = answer(chat(api, "list 3 colours", response_format={"type": "json_object"}))
    data = json.loads(text)
    assert isinstance(data, dict)
    assert "1. red" in data["answer"]


def test_repeated_prefix_is_reported_as_cached_tokens(api):
    messages = [{"role": "system", "content": "You are terse. " * 20}, {"role": "user", "content": "first question"}]
    api.post("/chat/completions", json={"model": "local/chat", "messages": messages})
    follow = [*messages[:1], {"role": "user", "content": "another question"}]
    usage = api.post("/chat/completions", json={"model": "local/chat", "messages": follow}).json()["usage"]
    assert usage["prompt_tokens_details"]["cached_tokens"] > 40
    assert usage["prompt_cache_hit_tokens"] + usage["prompt_cache_miss_tokens"] == usage["prompt_tokens"]


def test_reasoner_returns_reasoning_content_and_reasoning_tokens(api):
    body = chat(api, "what is 6*7", model="local/reasoner").json()
    message = body["choices"][0]["message"]
    assert "6 × 7 = 42" in message["reasoning_content"]
    assert "**42**" in message["content"]
    assert body["usage"]["completion_tokens_details"]["reasoning_tokens"] > 10


def test_thinking_budget_limits_reasoning_tokens(api):
    body = chat(api, "think step by step about oceans", model="local/reasoner", thinking_budget=128).json()
    assert body["usage"]["completion_tokens_details"]["reasoning_tokens"] == 128


def test_enable_thinking_false_gives_an_empty_reasoning_string(api):
    body = chat(api, "hello", model="local/reasoner", enable_thinking=False, n=2).json()
    assert [c["message"]["reasoning_content"] for c in body["choices"]] == ["", ""]
    assert body["usage"]["completion_tokens_details"]["reasoning_tokens"] == 0


def test_min_p_model_accepts_min_p(api):
    assert chat(api, "hello", model="local/minp", min_p=0.05).status_code == 200


def check_schema(value, schema):
    """A small JSON-schema check for the subset the tests use."""
    types = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict, "array": list}
    assert isinstance(value, types[schema.get("type", "string")])
    if "enum" in schema:
        assert value in schema["enum"]
    if "minimum" in schema:
        assert value >= schema["minimum"]
    if "maximum" in schema:
        assert value <= schema["maximum"]
    if schema.get("type") == "object":
        assert set(schema.get("required", [])) <= set(value)
        assert set(value) <= set(schema.get("properties", {}))
        for key, item in value.items():
            check_schema(item, schema["properties"][key])


def test_tool_call_with_arguments_filled_from_the_message(api):
    response = chat(api, "What's the weather in Paris?", model="local/tools", tools=[GET_WEATHER])
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    call = choice["message"]["tool_calls"][0]
    assert call["type"] == "function"
    assert call["id"]
    assert call["function"]["name"] == "get_weather"
    arguments = json.loads(call["function"]["arguments"])
    assert arguments == {"city": "Paris"}
    check_schema(arguments, GET_WEATHER["function"]["parameters"])


def test_tool_call_fills_enums_numbers_and_quoted_strings(api):
    content = 'Weather forecast for "New York" for 3 days in fahrenheit please'
    call = chat(api, content, model="local/tools", tools=[GET_WEATHER]).json()["choices"][0]["message"]["tool_calls"][0]
    arguments = json.loads(call["function"]["arguments"])
    assert arguments == {"city": "New York", "unit": "fahrenheit", "days": 3}
    check_schema(arguments, GET_WEATHER["function"]["parameters"])


def test_after_a_tool_result_the_model_answers_with_it(api):
    messages = [
        {"role": "user", "content": "What's the weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temperature": 18, "condition": "sunny"}'},
    ]
    body = api.post(
        "/chat/completions", json={"model": "local/tools", "messages": messages, "tools": [GET_WEATHER]}
    ).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert "get_weather" in choice["message"]["content"]
    assert "18" in choice["message"]["content"]
    assert "sunny" in choice["message"]["content"]


def test_unrelated_message_does_not_call_a_tool(api):
    body = chat(api, "list 3 fruits", model="local/tools", tools=[GET_WEATHER]).json()
    assert body["choices"][0]["finish_reason"] == "stop"


def test_verified_model_is_403_plain(api):
    response = chat(api, "hello", model="local/verified")
    assert response.status_code == 403
    assert response.headers["content-type"].startswith("text/plain")
    assert "verification" in response.text
