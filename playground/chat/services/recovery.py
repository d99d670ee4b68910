"""Answers whose process died: the heartbeat sweep ends them as interrupted, keeping what was flushed."""

from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from playground.chat.models import Conversation, Message
from playground.chat.services.generation import KIND
from playground.lib import detached


def sweep(cutoff, live: list, conversation: Conversation | None = None) -> int:
    """End the streaming messages nobody stamped since `cutoff` (their process died) as interrupted, keeping
    what was flushed (content, reasoning, usage); `live` are this process's own. Returns how many."""
    stale = Message.objects.filter(Q(heartbeat__lt=cutoff) | Q(heartbeat=None), status=Message.STREAMING)
    if conversation is not None:
        stale = stale.filter(conversation=conversation)
    return stale.exclude(pk__in=live).update(status=Message.INTERRUPTED)


def beat(live: list) -> None:
    Message.objects.filter(pk__in=live, status=Message.STREAMING).update(heartbeat=timezone.now())


def mark_interrupted(conversation: Conversation | None = None) -> int:
    """The sweep at once (a page or a websocket looking at a conversation does not wait for the next one)."""
    cutoff = timezone.now() - timedelta(seconds=detached.stale_seconds())
    return sweep(cutoff, detached.keys(KIND), conversation)
