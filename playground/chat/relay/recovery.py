"""Answers whose process died: the heartbeat sweep ends them as interrupted, keeping what was flushed."""

from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from playground.chat.models import Conversation, Message
from playground.chat.relay.generation import KIND
from playground.lib import detached


def sweep(cutoff, live: list, conversation: Conversation | None = None) -> int:
    """End the streaming messages nobody stamped since `cutoff` (their process died) as interrupted, keeping
    what was flushed (content, reasoning, usage); `live` are this process's own. Returns how many."""
    stale = Message.objects.filter(Q(heartbeat__lt=cutoff) | Q(heartbeat=None), status=Message.STREAMING)
    if conversation is not None:
        stale = stale.filter(conversation=conversation)
    return stale.exclude(pk__in=live).update(status=Message.INTERRUPTED)


def beat(live: list) -> None:
    # The rows a periodic save (flushes.py) holds are skipped: that save stamps them, and on PostgreSQL waiting
    # for them while holding others deadlocked with it (its transaction takes the rows in another order).
    with transaction.atomic():
        rows = Message.objects.select_for_update(skip_locked=True).filter(pk__in=live, status=Message.STREAMING)
        Message.objects.filter(pk__in=list(rows.values_list("pk", flat=True))).update(heartbeat=timezone.now())


def mark_interrupted(conversation: Conversation | None = None) -> int:
    """The sweep at once (a page or a websocket looking at a conversation does not wait for the next one)."""
    cutoff = timezone.now() - timedelta(seconds=detached.stale_seconds())
    return sweep(cutoff, detached.keys(KIND), conversation)


# A generation stamps its row every FLUSH_EVERY (1 s): a row not stamped for this long has no live generation.
ORPHAN_AFTER = 2.0


def orphan_wait(message: Message) -> float:
    """Seconds until the row would have been stamped again by a live generation (0: it is overdue already)."""
    if message.heartbeat is None:
        return 0.0
    age = (timezone.now() - message.heartbeat).total_seconds()
    return max(0.0, ORPHAN_AFTER - age)


def interrupt_orphan(message: Message) -> bool:
    """End a streaming answer as interrupted at once when no generation answered a snapshot request for it.

    The request went through the channel layer to every process. The row is ended only if nothing stamped it
    since `message` was read (after orphan_wait(): a live generation would have), and never while this process
    runs its generation: a generation that is alive but slow to answer is left alone. Returns whether it was
    ended."""
    if message.pk in detached.keys(KIND):
        return False
    rows = Message.objects.filter(pk=message.pk, status=Message.STREAMING, heartbeat=message.heartbeat)
    if message.heartbeat is None:
        rows = Message.objects.filter(pk=message.pk, status=Message.STREAMING, heartbeat=None)
    return rows.update(status=Message.INTERRUPTED) > 0
