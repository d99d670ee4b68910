"""Prepared queries give what their querysets give, with the values of each run, on either database."""

import pytest
from django.db.models import Q

from playground.chat.models import Conversation, Message
from playground.lib.prepared import Prepared
from tests.factories import add_connection

pytestmark = pytest.mark.django_db


@pytest.fixture
def chats(alice, bob):
    made = {}
    for owner in (alice, bob):
        for n in range(2):
            conversation = Conversation.objects.create(owner=owner, title=f"{owner.username} {n}")
            for status in (Message.STREAMING, Message.COMPLETE, Message.STREAMING):
                Message.objects.create(conversation=conversation, role="assistant", content=status, status=status)
            made.setdefault(owner.username, []).append(conversation)
    return made


RUNNING = Prepared(
    lambda user: Message.objects.filter(conversation__owner_id=user, status=Message.STREAMING).values("pk"),
    user=int,
)
TITLED = Prepared(
    lambda user, title: Conversation.objects.filter(Q(owner_id=user) & Q(title=title)).order_by("pk"),
    user=int,
    title=str,
)


def test_a_count_counts_the_rows_of_the_values_given(chats, alice, bob):
    assert RUNNING.count(user=alice.pk) == 4
    assert RUNNING.count(user=bob.pk) == 4
    Message.objects.filter(conversation__owner=bob).update(status=Message.COMPLETE)
    assert RUNNING.count(user=bob.pk) == 0
    assert RUNNING.count(user=alice.pk) == Message.objects.filter(conversation__owner=alice, status="streaming").count()


def test_objects_and_first_are_the_querysets_objects(chats, alice, bob):
    wanted = Conversation.objects.get(owner=bob, title="bob 1")
    found = TITLED.first(user=bob.pk, title="bob 1")
    assert (found.pk, found.title, found.owner_id) == (wanted.pk, wanted.title, wanted.owner_id)
    assert TITLED.first(user=alice.pk, title="bob 1") is None
    assert [c.pk for c in TITLED.objects(user=alice.pk, title="alice 0")] == [chats["alice"][0].pk]


def test_deferred_fields_stay_deferred_and_are_read_when_asked_for(chats, alice):
    only = Prepared(lambda pk: Message.objects.filter(pk=pk).only("status"), pk=int)
    message = Message.objects.filter(conversation__owner=alice).first()
    found = only.first(pk=message.pk)
    assert found.get_deferred_fields() >= {"content"}
    assert found.status == message.status and found.content == message.content


def test_rows_are_the_stored_values(alice):
    connection = add_connection(alice, name="Rows")
    rows = Prepared(lambda pk: connection.__class__.objects.filter(pk=pk).values_list("pk", "name"), pk=int)
    assert rows.rows(pk=connection.pk) == [(connection.pk, "Rows")]
    assert rows.rows(pk=connection.pk + 1000) == []


def test_a_keyword_that_is_no_parameter_of_the_sql_is_refused_when_first_run(alice):
    nowhere = Prepared(lambda user: Conversation.objects.filter(owner_id=alice.pk), user=int)
    with pytest.raises(ValueError, match="user"):
        nowhere.count(user=alice.pk)
