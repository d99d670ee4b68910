"""Tool round trips against each provider: the calls' results go back as `tool` messages and the turn continues."""

import json

import pytest
from asgiref.sync import sync_to_async

from playground.chat import services
from playground.chat.models import Message
from tests.chat.conftest import connect, finish, receive_until_final
from tests.providers.test_chat import WEATHER, conversation_on

pytestmark = pytest.mark.django_db(transaction=True)

CLOCK = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "The local time of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


async def follow(conversation, start):
    """Run `start()` (a coroutine returning a Turn) and follow its answer to the end over a websocket."""
    ws = await connect(conversation.pk, conversation.owner)
    turn = await start()
    events = await receive_until_final(ws, turn.assistant.pk)
    await ws.disconnect()
    return turn, events, await finish(turn.assistant.pk)


def question(provider, text: str, calls: list[tuple[str, dict]]) -> str:
    """The user's words; the local model is told which calls to make (the fake calls every tool of the request)."""
    if provider.fake:
        return text
    return text + "".join(f" [call:{name} {json.dumps(arguments)}]" for name, arguments in calls)


def sent_bodies(provider, turn) -> dict:
    """The body the playground sent for `turn`: the fake's own record of it, else the built request."""
    if provider.fake:
        return provider.fake.state.bodies("/chat/completions")[-1]
    return turn.request.body


async def test_a_tool_result_continues_the_turn_with_the_exact_spec_messages(provider):
    conversation = await sync_to_async(conversation_on)(provider, provider.tools_model, params={"tools": [WEATHER]})
    text = question(provider, "What's the weather in Paris?", [("get_weather", {"city": "Paris"})])
    _, _, called = await follow(conversation, lambda: services.send(conversation, text))
    assert called.finish_reason == "tool_calls" and called.status == Message.COMPLETE
    [call] = called.tool_calls
    assert (await sync_to_async(lambda: called.tool_cards)())["waiting"]

    result = '{"temperature": 18, "unit": "celsius"}'
    turn, events, final = await follow(
        conversation,
        lambda: services.submit_tool_results(conversation, {call["id"]: result}),
    )
    body = sent_bodies(provider, turn)
    *_, user, assistant, tool = body["messages"]
    assert user["role"] == "user" and "Paris" in json.dumps(user["content"])
    assert assistant == {
        "role": "assistant",
        "content": called.content,
        "tool_calls": [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": "get_weather", "arguments": call["function"]["arguments"]},
            }
        ],
    }
    assert tool == {"role": "tool", "tool_call_id": call["id"], "content": result}
    assert body["tools"] == [WEATHER]

    assert final.status == Message.COMPLETE and final.finish_reason == "stop" and final.content
    if provider.fake:
        assert final.content == f"The tool answered {result}; that settles it."
    saved = await sync_to_async(list)(conversation.messages.values_list("role", "tool_call_id"))
    assert saved == [("user", ""), ("assistant", ""), ("tool", call["id"]), ("assistant", "")]
    # The answer that called the tool no longer waits: its card shows the call as answered, without a box.
    called = await Message.objects.aget(pk=called.pk)
    cards = await sync_to_async(lambda: called.tool_cards)()
    assert not cards["waiting"] and cards["cards"][0]["result"] == result
    assert events[-1]["type"] == "done"
    # Other tabs get the tool message along with the new answer's placeholder.
    start = next(e for e in events if e["type"] == "start")
    assert start["html"].count("<article") == 2 and 'data-role="tool"' in start["html"]


async def test_parallel_calls_are_answered_together(provider):
    tools = [WEATHER, CLOCK]
    conversation = await sync_to_async(conversation_on)(provider, provider.tools_model, params={"tools": tools})
    text = question(
        provider,
        "Weather and time in Paris?",
        [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})],
    )
    _, _, called = await follow(conversation, lambda: services.send(conversation, text))
    calls = called.tool_calls
    assert [c["function"]["name"] for c in calls] == ["get_weather", "get_time"]
    assert len({c["id"] for c in calls}) == 2

    # One result alone is refused, naming the call that has none; nothing is saved.
    with pytest.raises(services.ToolResultsError, match=r"Result of get_time \(" + calls[1]["id"]):
        await services.submit_tool_results(conversation, {calls[0]["id"]: "18 C"})
    assert not await conversation.messages.filter(role="tool").aexists()

    results = {calls[0]["id"]: "18 C, sunny", calls[1]["id"]: "14:05 CET"}
    turn, _, final = await follow(conversation, lambda: services.submit_tool_results(conversation, results))
    body = sent_bodies(provider, turn)
    assert [m["role"] for m in body["messages"][-4:]] == ["user", "assistant", "tool", "tool"]
    assert [c["id"] for c in body["messages"][-3]["tool_calls"]] == [c["id"] for c in calls]
    assert body["messages"][-2:] == [
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": "18 C, sunny"},
        {"role": "tool", "tool_call_id": calls[1]["id"], "content": "14:05 CET"},
    ]
    assert final.status == Message.COMPLETE and final.content

    # Nothing waits any more: a second submit is refused.
    with pytest.raises(services.ToolResultsError, match="no tool call is waiting"):
        await services.submit_tool_results(conversation, results)
