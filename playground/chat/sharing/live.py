"""Database and rendering helpers of the live-follow socket (kept out of the consumer, which only relays)."""

from datetime import timedelta

from django.template.loader import render_to_string
from django.utils import timezone

from playground.chat import branches
from playground.chat.models import Message
from playground.chat.sharing import ConversationKind, conversation_messages, decorate
from playground.sharing.models import WATCH_STALE, Share, Watcher


def live_share(token: str, user) -> Share | None:
    """The share a live viewer may follow: a live conversation link, neither revoked nor expired, for this user."""
    share = Share.objects.served().filter(token=token, kind=ConversationKind.name, live=True).first()
    if share is None or not share.visible_to(user):
        return None
    return share


def still_open(share_pk: int, user=None) -> bool:
    """The link still exists, is live, has not expired and is still for this viewer (its owner may have edited its
    visibility or team, or the viewer left the team)."""
    share = Share.objects.served().filter(pk=share_pk).first()
    return share is not None and share.live and share.visible_to(user)


def watch(share: Share, channel: str) -> None:
    Watcher.objects.update_or_create(channel=channel, defaults={"share": share, "seen": timezone.now()})
    Watcher.objects.filter(seen__lt=timezone.now() - timedelta(seconds=WATCH_STALE * 4)).delete()


def beat(channel: str) -> None:
    Watcher.objects.filter(channel=channel).update(seen=timezone.now())


def unwatch(channel: str) -> None:
    Watcher.objects.filter(channel=channel).delete()


def message_for(conversation_id: int, message_id: int) -> Message | None:
    return Message.objects.filter(pk=message_id, conversation_id=conversation_id).first()


def render_path(share: Share, upto: int | None = None) -> list[tuple[int, str, str]]:
    """The selected path as the owner's tab shows it (without messages after `upto` not yet announced), each
    message rendered as a viewer sees it, with its request."""
    conversation = share.source
    messages = [m for m in branches.thread(conversation) if not upto or m.pk <= upto]
    rows = conversation_messages(conversation, messages)
    frozen = set(share.files.values_list("key", flat=True))
    return [(row["id"], row["status"], render_row(row, frozen, share.token)) for row in rows]


def render_one(share: Share, message_id: int) -> str:
    """One message as a viewer sees it; "" when it is not on the selected path (a branch switched away)."""
    return next((html for pk, _, html in render_path(share, message_id) if pk == message_id), "")


def render_row(row: dict, frozen: set, token: str) -> str:
    return render_to_string("chat/sharing/_message.html", {"message": decorate(row, frozen), "token": token})
