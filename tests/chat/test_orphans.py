"""A streaming answer whose generation does not answer a snapshot request: ended at once if its row is not being
stamped, left alone while it is (a live generation out of reach, or one of this process)."""

import time
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from playground.chat.models import Message
from playground.chat.relay.display import SNAPSHOT_TIMEOUT
from playground.chat.relay.generation import KIND
from playground.chat.relay.recovery import ORPHAN_AFTER, interrupt_orphan, orphan_wait
from playground.chat.relay.usage import estimated_usage
from playground.lib import detached
from tests.chat.conftest import connect

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.needs_local_api,
]  # conversations on the Local connection


def streaming(conversation, age: float, **fields) -> Message:
    return Message.objects.create(
        conversation=conversation,
        role="assistant",
        status=Message.STREAMING,
        heartbeat=timezone.now() - timedelta(seconds=age),
        **fields,
    )


def test_an_unstamped_row_is_an_orphan_and_a_stamped_one_is_not(make_conversation):
    conversation = make_conversation()
    old = streaming(conversation, 30)
    assert orphan_wait(old) == 0
    assert interrupt_orphan(old) is True
    assert Message.objects.get(pk=old.pk).status == Message.INTERRUPTED

    young = streaming(conversation, 0.5)
    assert 1.0 < orphan_wait(young) <= ORPHAN_AFTER
    Message.objects.filter(pk=young.pk).update(heartbeat=timezone.now())  # its generation flushed meanwhile
    assert interrupt_orphan(young) is False
    assert Message.objects.get(pk=young.pk).status == Message.STREAMING


def test_a_generation_of_this_process_is_never_an_orphan(make_conversation):
    conversation = make_conversation()
    message = streaming(conversation, 30)
    marker = object()
    detached.track(KIND, message.pk, marker)
    try:
        assert interrupt_orphan(message) is False
    finally:
        detached.untrack(KIND, message.pk, marker)
    assert Message.objects.get(pk=message.pk).status == Message.STREAMING


async def test_a_subscribe_ends_a_recently_stamped_orphan_once_its_stamp_is_overdue(alice, make_conversation):
    conversation = await sync_to_async(make_conversation)()
    message = await sync_to_async(streaming)(conversation, 0.2, content="Half **an** answer", seq=3)
    ws = await connect(conversation.pk, alice)
    started = time.monotonic()
    await ws.send_json_to({"type": "subscribe", "message_id": message.pk, "after": 0})
    event = await ws.receive_json_from(timeout=5)
    elapsed = time.monotonic() - started
    await ws.disconnect()
    assert event["type"] == "done" and 'data-status="interrupted"' in event["html"]
    assert "<strong>an</strong>" in event["html"]
    # Not after the heartbeat sweep (10 s): as soon as a live generation would have stamped the row again.
    assert SNAPSHOT_TIMEOUT <= elapsed < ORPHAN_AFTER + 0.5


def test_the_estimated_usage_counts_deltas_and_the_prompt():
    body = {"messages": [{"role": "user", "content": "x" * 400}]}
    usage = estimated_usage(body, content_deltas=30, reasoning_deltas=5)
    assert usage == {
        "prompt_tokens": 101,
        "completion_tokens": 35,
        "total_tokens": 136,
        "estimated": True,
        "completion_tokens_details": {"reasoning_tokens": 5},
    }


def test_the_heartbeat_stamps_live_rows_and_skips_one_a_save_holds(make_conversation):
    """A row locked by a periodic save (flushes.py) is skipped, not waited for: on PostgreSQL the two took the
    rows in different orders and deadlocked."""
    import threading

    from django.db import connection, connections, transaction

    from playground.chat.relay import recovery

    conversation = make_conversation()
    held, free, other = (streaming(conversation, 30) for _ in range(3))
    locked, done = threading.Event(), threading.Event()

    def save():
        with transaction.atomic():
            Message.objects.filter(pk=held.pk).update(content="flushed")
            locked.set()
            done.wait(10)
        connections.close_all()

    saver = threading.Thread(target=save)
    if connection.vendor == "postgresql":
        saver.start()
        locked.wait(10)
    try:
        recovery.beat([held.pk, free.pk])
    finally:
        done.set()
        if saver.is_alive():
            saver.join()
    age = {m.pk: (timezone.now() - m.heartbeat).total_seconds() for m in Message.objects.all()}
    assert age[free.pk] < 5 and age[other.pk] >= 30
    assert (age[held.pk] >= 30) == (connection.vendor == "postgresql")  # skipped there, stamped on SQLite
