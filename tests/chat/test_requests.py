"""The request body a conversation sends: spec rules the client keeps, and one value per parameter."""

import json

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from playground.chat import services
from playground.chat.models import Message
from tests.chat.conftest import finish

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]


def body_of(conversation, next_user="next question"):
    return services.preview_request(conversation, next_user).body


def add_turns(conversation, count):
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        Message.objects.create(conversation=conversation, role=role, content=f"{role} turn {i}")


def test_earlier_reasoning_is_never_sent_again(make_conversation):
    conversation = make_conversation("local/reasoner")
    Message.objects.create(conversation=conversation, role="user", content="What is 2 + 2?")
    Message.objects.create(
        conversation=conversation, role="assistant", content="4", reasoning="SECRET-CHAIN-OF-THOUGHT"
    )
    body = body_of(conversation)
    sent = json.dumps(body)
    assert "SECRET-CHAIN-OF-THOUGHT" not in sent and "reasoning_content" not in sent
    assert body["messages"] == [
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "next question"},
    ]


def test_failed_and_running_answers_are_left_out(make_conversation):
    conversation = make_conversation()
    Message.objects.create(conversation=conversation, role="user", content="one")
    Message.objects.create(conversation=conversation, role="assistant", status="error", content="", error={})
    Message.objects.create(conversation=conversation, role="assistant", status="streaming", content="partial")
    assert [m["content"] for m in body_of(conversation)["messages"]] == ["one", "next question"]


def test_a_long_conversation_sends_the_system_prompt_and_the_latest_nine(make_conversation):
    conversation = make_conversation(system_prompt="Be brief.")
    add_turns(conversation, 15)
    request = services.preview_request(conversation, "next question")
    messages = request.body["messages"]
    assert len(messages) == 10
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert [m["content"] for m in messages[1:]] == [
        f"{r} turn {i}" for i, r in zip(range(7, 15), ["assistant", "user"] * 4, strict=True)
    ] + ["next question"]
    assert "at most 10" in request.note and "latest messages" in request.note


def test_the_first_and_latest_policy_keeps_the_first_question(make_conversation):
    conversation = make_conversation(system_prompt="Be brief.", context_policy="first_and_latest")
    add_turns(conversation, 15)
    request = services.preview_request(conversation, "next question")
    messages = request.body["messages"]
    assert len(messages) == 10
    assert messages[1] == {"role": "user", "content": "user turn 0"}
    assert messages[2]["content"] == "user turn 8" and messages[-1]["content"] == "next question"
    assert "first question" in request.note


def test_ten_messages_or_fewer_are_sent_whole_without_a_note(make_conversation):
    conversation = make_conversation()
    add_turns(conversation, 9)
    request = services.preview_request(conversation, "next question")
    assert len(request.body["messages"]) == 10 and request.note == ""


def test_multimodal_models_get_content_parts(make_conversation):
    conversation = make_conversation("local/vision", system_prompt="Describe.")
    messages = body_of(conversation, "what is this?")["messages"]
    assert messages == [
        {"role": "system", "content": [{"type": "text", "text": "Describe."}]},
        {"role": "user", "content": [{"type": "text", "text": "what is this?"}]},
    ]


def test_input_beyond_the_context_window_is_warned_about(make_conversation):
    conversation = make_conversation(params={"max_tokens": 8000})
    Message.objects.create(conversation=conversation, role="user", content="word " * 25000)
    request = services.preview_request(conversation)
    assert "exceeds the context window of local/chat (32768 tokens)" in request.note


CASES = [
    ("local/chat", {"temperature": 0.3}, {"temperature": 0.3}),
    ("local/chat", {"top_p": 0.9}, {"top_p": 0.9}),
    ("local/chat", {"top_k": 20}, {"top_k": 20}),
    ("local/chat", {"frequency_penalty": 0.5}, {"frequency_penalty": 0.5}),
    ("local/chat", {"n": 2}, {"n": 2}),
    ("local/chat", {"max_tokens": 256}, {"max_tokens": 256}),
    ("local/chat", {"seed": 42}, {"seed": 42}),
    ("local/chat", {"stop": ["END", "###"]}, {"stop": ["END", "###"]}),
    ("local/chat", {"response_format": "json_object"}, {"response_format": {"type": "json_object"}}),
    ("local/chat", {"stream": False}, {"stream": False}),
    (
        "local/reasoner",
        {"enable_thinking": True, "thinking_budget": 1024},
        {"enable_thinking": True, "thinking_budget": 1024},
    ),
    ("local/reasoner-effort", {"enable_thinking": True, "reasoning_effort": "max"}, {"reasoning_effort": "max"}),
    ("local/minp", {"min_p": 0.05}, {"min_p": 0.05}),
]


@pytest.mark.parametrize(("model_id", "params", "expected"), CASES)
def test_each_parameter_goes_into_the_body_as_the_spec_names_it(make_conversation, model_id, params, expected):
    body = body_of(make_conversation(model_id, params=params))
    for name, value in expected.items():
        assert body[name] == value


def test_parameters_the_model_does_not_support_are_never_sent(make_conversation):
    body = body_of(
        make_conversation("local/chat", params={"min_p": 0.1, "thinking_budget": 500, "reasoning_effort": "max"})
    )
    assert not {"min_p", "thinking_budget", "enable_thinking", "reasoning_effort"} & set(body)
    assert body["stream"] is True and "top_p" not in body


SAMPLING = {"temperature", "top_p", "top_k", "min_p", "frequency_penalty", "presence_penalty", "n", "seed"}


@pytest.mark.parametrize("model_id", ["local/chat", "local/reasoner", "local/minp", "local/reasoner-effort"])
def test_a_panel_left_untouched_sends_no_parameter_the_user_did_not_set(make_conversation, model_id):
    body = body_of(make_conversation(model_id))
    assert set(body) == {"model", "messages", "stream", "stream_options"}
    assert body["stream_options"] == {"include_usage": True}


def test_the_panel_shows_the_spec_defaults_as_placeholders_not_values(alice_client, make_conversation):
    conversation = make_conversation("local/reasoner")
    page = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    temperature = page[page.index('name="temperature"') :].split(">", 1)[0]
    assert 'placeholder="0.7"' in temperature and "value=" not in temperature
    assert "provider default (on)" in page and "provider default (text)" in page


def test_top_k_reaches_only_models_that_take_it(make_conversation):
    from playground.catalog.models import CatalogModel

    conversation = make_conversation("local/chat", params={"top_k": 20, "min_p": 0.2})
    assert body_of(conversation)["top_k"] == 20
    connection = conversation.connection
    seeded = CatalogModel.objects.get(connection=None, scope="local", model_id="local/chat")
    seeded.pk, seeded.connection, seeded.scope, seeded.top_k = None, connection, "connection", False
    seeded.save()
    body = body_of(conversation)
    assert "top_k" not in body and "min_p" not in body


def test_no_stream_options_without_streaming_or_when_the_connection_turned_them_off(make_conversation):
    assert "stream_options" not in body_of(make_conversation(params={"stream": False}))
    conversation = make_conversation()
    conversation.connection.include_usage = False
    conversation.connection.save()
    assert "stream_options" not in body_of(conversation)


def test_thinking_switched_off_sends_no_budget(make_conversation):
    body = body_of(make_conversation("local/reasoner", params={"enable_thinking": False, "thinking_budget": 2048}))
    assert body["enable_thinking"] is False and "thinking_budget" not in body


@pytest.mark.django_db(transaction=True)
async def test_the_local_api_accepts_a_body_with_every_parameter_of_a_reasoning_model(
    live_server, alice, make_conversation
):
    params = {
        "temperature": 0.2,
        "top_p": 0.8,
        "top_k": 10,
        "frequency_penalty": 0.1,
        "n": 2,
        "max_tokens": 300,
        "seed": 7,
        "stop": ["zzz"],
        "response_format": "text",
        "enable_thinking": True,
        "thinking_budget": 256,
    }
    conversation = await sync_to_async(make_conversation)("local/reasoner", params=params)
    turn = await services.send(conversation, "hello")
    message = await finish(turn.assistant.pk)
    assert message.status == "complete", message.error
    assert message.params["thinking_budget"] == 256 and message.params["n"] == 2
    assert len(message.choices) == 1 and message.choices[0]


def test_a_model_the_catalog_does_not_know_gets_no_capability_parameter(make_conversation):
    params = {"top_k": 20, "min_p": 0.1, "enable_thinking": True, "temperature": 0.5}
    body = body_of(make_conversation("acme/unknown", params=params))
    assert body["model"] == "acme/unknown" and body["temperature"] == 0.5
    assert not {"top_k", "min_p", "enable_thinking"} & set(body)
