"""A long conversation opens with the same queries as a short one (no query per message)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from playground.chat import branches
from playground.chat.models import Message

pytestmark = pytest.mark.needs_local_api  # conversations on the Local connection


def add_messages(conversation, count: int) -> None:
    Message.objects.bulk_create(
        Message(
            conversation=conversation,
            role="user" if i % 2 == 0 else "assistant",
            content=f"message **{i}**\n\n- a list\n- of items\n\n```python\nprint({i})\n```",
            usage={"prompt_tokens": 5, "completion_tokens": 7} if i % 2 else None,
            trace_id=f"trace-{i}" if i % 2 else "",
        )
        for i in range(count)
    )
    # bulk_create skips Message.save(), which would chain each message to the one before.
    rows = list(conversation.messages.all())
    Message.objects.bulk_update(branches.link_linear(rows), ["parent", "selected"])


def queries_of_page(client, conversation) -> int:
    url = reverse("chat:conversation", args=[conversation.pk])
    client.get(url)  # the once-per-process sweep
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    assert response.content.decode().count('<article class="message') == conversation.messages.count()
    return len(queries)


def test_a_conversation_of_500_messages_opens_with_as_many_queries_as_one_of_10(alice_client, make_conversation):
    short, long = make_conversation(), make_conversation()
    add_messages(short, 10)
    add_messages(long, 500)
    assert queries_of_page(alice_client, long) == queries_of_page(alice_client, short)


def test_answers_with_tool_calls_cost_no_query_each(alice_client, make_conversation):
    short, long = make_conversation(), make_conversation()
    add_messages(short, 10)
    add_messages(long, 500)
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    Message.objects.filter(role="assistant").update(tool_calls=[call])
    assert queries_of_page(alice_client, long) == queries_of_page(alice_client, short)
