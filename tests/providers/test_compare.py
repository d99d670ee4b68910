"""Compare against each provider: columns stream at once over one websocket, interleaved and without loss, each
with its own request, usage and timings; pick makes one column the thread's answer."""

import asyncio

import pytest
from asgiref.sync import sync_to_async

from playground.chat import branches, services
from playground.chat.models import Conversation, Message
from playground.chat.services import compare
from tests.chat.conftest import connect, finish

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "write 60 words about tides"


def new_conversation(provider) -> Conversation:
    connection = provider.connection
    return Conversation.objects.select_related("owner").create(
        owner=connection.owner, connection=connection, model_id=provider.chat_model
    )


def columns_for(provider) -> list[dict]:
    """Two models, and the first one again with other parameters: four columns."""
    return [
        {"model": provider.chat_model, "params": {}},
        {"model": provider.tools_model, "params": {}},
        {"model": provider.chat_model, "params": {"temperature": 0.2}},
        {"model": provider.chat_model, "params": '{"max_tokens": 40}'},
    ]


async def events_until_done(ws, ids: set[int], timeout=60) -> list[dict]:
    events, left = [], set(ids)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while left:
        event = await ws.receive_json_from(timeout=max(0.1, deadline - loop.time()))
        events.append(event)
        if event["type"] in ("done", "error"):
            left.discard(event["message_id"])
    return events


async def test_four_columns_stream_at_once_without_loss_each_with_its_usage(provider):
    if provider.fake:
        # 30 ms between words (60 words: about 2 s a column): the columns overlap even when a loaded machine starts
        # them far apart, as the local API's own pace makes its columns do.
        provider.fake.state.delay = 0.03
    conversation = await sync_to_async(new_conversation)(provider)
    ws = await connect(conversation.pk, conversation.owner)
    turns = await compare.start(conversation, {"content": QUESTION, "columns": columns_for(provider)})
    ids = [turn.assistant.pk for turn in turns]
    events = await events_until_done(ws, set(ids))
    await ws.disconnect()
    saved = [await finish(pk) for pk in ids]

    # Each column's deltas, in order, are its whole saved answer; the sequence numbers only grow.
    for message in saved:
        assert message.status == "complete", message.error
        deltas = [e for e in events if e["message_id"] == message.pk and e["type"] == "delta"]
        assert deltas and "".join(d["text"] for d in deltas) == message.content
        seqs = [d["seq"] for d in deltas]
        assert seqs == sorted(set(seqs))
        assert message.usage["completion_tokens"] > 0 and message.ttft_ms is not None and message.total_ms
        done = next(e for e in events if e["message_id"] == message.pk and e["type"] == "done")
        assert "<dt>TTFT</dt>" in done["html"] and "Continue with this one" in done["html"]
    # At once: another column's delta arrives between a column's first and last delta.
    order = [e["message_id"] for e in events if e["type"] == "delta"]
    spans = {pk: (order.index(pk), len(order) - 1 - order[::-1].index(pk)) for pk in ids}
    assert any(other != pk and spans[pk][0] < i < spans[pk][1] for pk in ids for i, other in enumerate(order))

    # Every column asked its own model with its own parameters, the same question; one question row.
    bodies = [turn.request.body for turn in turns]
    assert [b["model"] for b in bodies] == [c["model"] for c in columns_for(provider)]
    assert all(b["messages"] == [{"role": "user", "content": QUESTION}] for b in bodies)
    assert bodies[2]["temperature"] == 0.2 and bodies[3]["max_tokens"] == 40
    if provider.fake:
        received = provider.fake.state.bodies("/chat/completions")[-4:]
        assert sorted(map(repr, received)) == sorted(map(repr, bodies))
    assert await Message.objects.filter(conversation=conversation, role="user").acount() == 1

    # Continue with the third column: it is the thread's answer, the others its siblings; the next turn follows.
    await compare.pick(conversation, {"message_id": ids[2]})
    thread = await sync_to_async(lambda: branches.thread(Conversation.objects.get(pk=conversation.pk)))()
    assert [m.pk for m in thread][-1] == ids[2]
    assert (thread[-1].sibling_index, thread[-1].sibling_count, thread[-1].columns) == (3, 4, [])
    assert not await Message.objects.filter(conversation=conversation).exclude(compare="").aexists()


async def test_compare_without_text_answers_the_last_question_again(provider):
    conversation = await sync_to_async(new_conversation)(provider)
    turn = await services.send(conversation, "Name a sea.")
    await finish(turn.assistant.pk)
    turns = await compare.start(conversation, {"content": "", "columns": columns_for(provider)[:2]})
    saved = [await finish(t.assistant.pk) for t in turns]
    assert all(m.parent_id == turn.user_message.pk and m.status == "complete" for m in saved)
    thread = await sync_to_async(branches.thread)(conversation)
    # The earlier answer and the two columns are siblings; the first column is shown.
    assert [m.pk for m in thread[-1].columns] == [t.assistant.pk for t in turns]
    assert thread[-1].sibling_count == 3
