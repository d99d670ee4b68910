"""The queries before a send's upstream call: as many for 2 messages as for 40 (no query per message), and
eight in all (the conversation, the selected model, the messages and their attachments; the gate's connection under
its lock, its slots in use and the lease it takes; and the lease's release when this test's launcher refuses)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from playground.chat import actions
from playground.chat.models import Message

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]  # conversations on the Local connection


class Launched(Exception):
    """Raised by the launcher: the body is built, the upstream call would start here."""


def launch(endpoint, body, limits):
    raise Launched


def queries_before_launch(ctx, fields) -> int:
    with CaptureQueriesContext(connection) as captured, pytest.raises(Launched):
        actions._prepare_send(ctx, fields, launch)
    return len(captured.captured_queries)


def add_turns(conversation, count):
    parent = conversation.messages.order_by("pk").last()
    for i in range(count):
        for role in ("user", "assistant"):
            parent = Message.objects.create(
                conversation=conversation, role=role, content=f"{role} {i}", status="complete", parent=parent
            )


def test_the_queries_before_the_upstream_call_are_as_many_for_2_messages_as_for_40(alice, make_conversation):
    conversation = make_conversation()
    ctx = actions.Context(alice, conversation.pk, None)
    fields = actions.form_fields({"content": "hello"})
    add_turns(conversation, 1)
    few = queries_before_launch(ctx, fields)
    add_turns(conversation, 19)
    assert queries_before_launch(ctx, fields) == few <= 8
