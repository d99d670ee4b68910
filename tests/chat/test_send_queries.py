"""The queries before a send's upstream call: as many for 2 messages as for 40 (no query per message), and
eight in all (the conversation, the selected model, the messages and their attachments; the gate's connection under
its lock, its slots in use and the lease it takes; and the lease's release when this test's launcher refuses)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from playground.catalog.models import CatalogModel
from playground.chat import actions, commands
from playground.chat.models import Conversation, Message
from playground.chat.send_cache import SendCache

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


# ---------------------------------------------------------------- the socket's cache (send_cache.py)


class Bodies:
    """A launcher that notes the body and starts nothing (the test gives the gate's lease back)."""

    def __init__(self):
        self.bodies, self.tickets = [], []

    def __call__(self, endpoint, body, limits):
        self.bodies.append(body)
        self.tickets.append(limits.ticket)


def sent_on(cache, ctx, content: str, launch) -> actions.Outcome:
    outcome = commands.prepare_send(
        ctx.user, ctx.conversation_id, actions.form_fields({"content": content}), (), launch, cache
    )
    for ticket in getattr(launch, "tickets", []):
        if ticket is not None:
            ticket.release()
    return outcome


def test_a_second_send_on_the_same_socket_reads_less_before_the_upstream_call(alice, make_conversation):
    conversation = make_conversation()
    add_turns(conversation, 3)
    ctx = actions.Context(alice, conversation.pk, None)
    fields = actions.form_fields({"content": "hello"})
    without = queries_before_launch(ctx, fields)
    cache = SendCache(alice, conversation.pk)
    assert sent_on(cache, ctx, "first", Bodies()).sent
    with CaptureQueriesContext(connection) as captured, pytest.raises(Launched):
        commands.prepare_send(alice, conversation.pk, fields, (), launch, cache)
    # The conversation and its model are only stamped (two queries the ORM does not build again), the attachments
    # not read: the messages and the gate's three are.
    sqls = [query["sql"] for query in captured.captured_queries]
    assert len(sqls) == without - 1 and not any('"chat_attachment"' in sql for sql in sqls)


def test_what_changed_since_the_sockets_last_send_goes_into_the_next_request(alice, make_conversation):
    conversation = make_conversation()
    ctx = actions.Context(alice, conversation.pk, None)
    cache, launch = SendCache(alice, conversation.pk), Bodies()
    assert sent_on(cache, ctx, "first", launch).sent
    # Meanwhile: a system prompt set, the answer ended and another tab's turn, the model's largest output lowered.
    Conversation.objects.filter(pk=conversation.pk).update(system_prompt="Answer in French.")
    add_turns(conversation, 1)
    Message.objects.filter(conversation=conversation, status="streaming").update(status="complete", content="ok")
    CatalogModel.objects.filter(model_id="local/chat").update(max_output=77)
    assert sent_on(cache, ctx, "second", launch).sent
    body = launch.bodies[-1]
    assert body["messages"][0] == {"role": "system", "content": "Answer in French."}
    assert [m["content"] for m in body["messages"][1:]] == ["first", "ok", "user 0", "assistant 0", "second"]
    assert cache.conversation()._selected_model[1].max_output == 77
    # The conversation deleted meanwhile: refused, as without the cache.
    Conversation.objects.filter(pk=conversation.pk).delete()
    assert sent_on(cache, ctx, "third", launch).status == 404
