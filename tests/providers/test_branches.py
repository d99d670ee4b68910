"""Branches against each provider: edit and resend, regenerate, switch, insert and delete, each request built from
the selected path only (the exact body: the fake provider's record of what it received; for the local API, what
the upstream client was given to send)."""

import pytest
from asgiref.sync import sync_to_async

from playground.chat import branches, services
from playground.chat.models import Conversation, Message
from playground.chat.services import branches as ops
from playground.upstream import client
from tests.chat.conftest import finish

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sent(provider, monkeypatch):
    """The chat bodies the provider was sent, in order."""
    bodies = []
    if provider.fake is None:
        original = client.chat_stream

        def spy(endpoint, body, headers=None, **options):
            bodies.append(body)
            return original(endpoint, body, headers, **options)

        monkeypatch.setattr(client, "chat_stream", spy)
        return bodies
    provider.fake.state.requests.clear()
    return _FakeBodies(provider.fake)


class _FakeBodies:
    def __init__(self, fake):
        self.fake = fake

    def __getitem__(self, index):
        return self.fake.state.bodies("/chat/completions")[index]

    def __len__(self):
        return len(self.fake.state.bodies("/chat/completions"))


def new_conversation(provider) -> Conversation:
    connection = provider.connection
    return Conversation.objects.select_related("owner").create(
        owner=connection.owner, connection=connection, model_id=provider.chat_model
    )


def path_of(conversation) -> list[tuple[str, str]]:
    """The selected path as (role, content), read afresh (what was persisted)."""
    fresh = Conversation.objects.get(pk=conversation.pk)
    return [(m.role, m.content) for m in branches.thread(fresh)]


async def run(operation, conversation, args):
    turn = await operation(conversation, args)
    message = await finish(turn.assistant.pk)
    assert message.status == "complete", message.error
    return message


async def test_edit_regenerate_switch_and_send_follow_the_selected_path(provider, sent):
    conversation = await sync_to_async(new_conversation)(provider)

    async def send(text):
        turn = await services.send(conversation, text)
        message = await finish(turn.assistant.pk)
        assert message.status == "complete", message.error
        return turn.user_message, message

    q1, a1 = await send("Name a river in France.")
    q2, a2 = await send("And one in Spain?")
    base = {k: v for k, v in sent[0].items() if k != "messages"}
    assert sent[1] == {
        **base,
        "messages": [
            {"role": "user", "content": q1.content},
            {"role": "assistant", "content": a1.content},
            {"role": "user", "content": q2.content},
        ],
    }

    # Edit the first question: the request carries only the edited question; the old branch stays.
    e1_answer = await run(ops.edit, conversation, {"message_id": q1.pk, "content": "Name a river in Italy."})
    assert sent[2] == {**base, "messages": [{"role": "user", "content": "Name a river in Italy."}]}
    assert await sync_to_async(path_of)(conversation) == [
        ("user", "Name a river in Italy."),
        ("assistant", e1_answer.content),
    ]

    # Switch back to the original question: its whole continuation is the thread again, and stays so.
    await ops.switch(conversation, {"message_id": q1.pk})
    original = [("user", q1.content), ("assistant", a1.content), ("user", q2.content), ("assistant", a2.content)]
    assert await sync_to_async(path_of)(conversation) == original

    # Regenerate the first answer: a sibling, from the path up to its question only.
    r1 = await run(ops.regenerate, conversation, {"message_id": a1.pk})
    assert sent[3] == {**base, "messages": [{"role": "user", "content": q1.content}]}
    assert await sync_to_async(path_of)(conversation) == [("user", q1.content), ("assistant", r1.content)]
    thread = await sync_to_async(branches.thread)(conversation)
    assert (thread[1].sibling_index, thread[1].sibling_count) == (2, 2)

    # Back to the first answer, then a new question: the request is that path plus the question.
    await ops.switch(conversation, {"message_id": a1.pk})
    await send("And one in Portugal?")
    assert sent[4] == {
        **base,
        "messages": [
            {"role": "user", "content": q1.content},
            {"role": "assistant", "content": a1.content},
            {"role": "user", "content": q2.content},
            {"role": "assistant", "content": a2.content},
            {"role": "user", "content": "And one in Portugal?"},
        ],
    }


async def test_inserted_and_deleted_messages_shape_the_next_request(provider, sent):
    conversation = await sync_to_async(new_conversation)(provider)
    turn = await services.send(conversation, "Translate: cat")
    a1 = await finish(turn.assistant.pk)
    q1 = turn.user_message
    base = {k: v for k, v in sent[0].items() if k != "messages"}
    # A few-shot pair and a system instruction inserted before the question, at the start of the thread.
    system = await ops.insert(conversation, {"after": "", "role": "system", "content": "Be brief."})
    shot_q = await ops.insert(conversation, {"after": system.pk, "role": "user", "content": "Translate: dog"})
    await ops.insert(conversation, {"after": shot_q.pk, "role": "assistant", "content": "chien"})
    # The answer to the real question is deleted: the next question follows the question.
    await ops.delete(conversation, {"message_id": a1.pk})
    assert not await Message.objects.filter(pk=a1.pk).aexists()
    turn = await services.send(conversation, "Translate: bird")
    assert (await finish(turn.assistant.pk)).status == "complete"
    assert sent[1] == {
        **base,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Translate: dog"},
            {"role": "assistant", "content": "chien"},
            {"role": "user", "content": q1.content},
            {"role": "user", "content": "Translate: bird"},
        ],
    }


async def test_a_retried_answer_in_the_middle_keeps_what_followed_it(provider, sent):
    conversation = await sync_to_async(new_conversation)(provider)
    q1 = await sync_to_async(branches.add)(conversation, None, role="user", content="Name a lake.")
    failed = await sync_to_async(branches.add)(
        conversation, q1.pk, role="assistant", status=Message.ERROR, error={"message": "boom"}
    )
    turn = await services.send(conversation, "And a mountain?")
    await finish(turn.assistant.pk)
    base = {k: v for k, v in sent[0].items() if k != "messages"}
    # The failed answer is left out of the request; the retry asks from the path up to its question.
    assert sent[0]["messages"] == [
        {"role": "user", "content": "Name a lake."},
        {"role": "user", "content": "And a mountain?"},
    ]
    retry = await sync_to_async(services.prepare_turn)(conversation, None, replace=failed)
    await services.start_turn(retry)
    answer = await finish(retry.assistant.pk)
    assert sent[1] == {**base, "messages": [{"role": "user", "content": "Name a lake."}]}
    assert not await Message.objects.filter(pk=failed.pk).aexists()
    assert await sync_to_async(path_of)(conversation) == [
        ("user", "Name a lake."),
        ("assistant", answer.content),
        ("user", "And a mountain?"),
        ("assistant", (await Message.objects.aget(pk=turn.assistant.pk)).content),
    ]
