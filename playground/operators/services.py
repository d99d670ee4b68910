"""Deactivate and reactivate an account. A deactivated account keeps all its data; it cannot sign in (password or
single sign-on), its sessions end, its websockets close, its running answers stop and its share links stop opening
(live viewers are told at once). Reactivation brings the links back; the person signs in again."""

from asgiref.sync import async_to_sync
from django.db import transaction

from playground.chat.models import Message
from playground.chat.services import request_stop
from playground.lib.sockets import close_account_sockets
from playground.operators.models import end_sessions, record
from playground.sharing.models import Share, tell_viewers


class Refused(Exception):
    """The action was not done; the words say why."""


def deactivate(user, *, actor) -> str:
    if user.pk == actor.pk:
        raise Refused("You cannot deactivate your own account (another superuser can).")
    if not user.is_active:
        raise Refused(f"{user} is already deactivated.")
    with transaction.atomic():
        user.is_active = False
        user.save(update_fields=["is_active"])
        sessions = end_sessions(user)
        live = [share.group for share in Share.objects.filter(owner=user, live=True)]
        streaming = list(
            Message.objects.filter(conversation__owner=user, status=Message.STREAMING).values_list("pk", flat=True)
        )
        words = f"{user} deactivated by {actor}: {sessions} session(s) ended, {len(streaming)} answer(s) stopped."
        record("deactivated", words, actor=actor, subject=user)

    def after():
        close_account_sockets(user.pk)
        for group in live:
            tell_viewers(group, "share.revoked")
        for pk in streaming:
            async_to_sync(request_stop)(pk)

    transaction.on_commit(after)
    return words


def reactivate(user, *, actor) -> str:
    if user.is_active:
        raise Refused(f"{user} is already active.")
    user.is_active = True
    user.save(update_fields=["is_active"])
    words = f"{user} reactivated by {actor}."
    record("reactivated", words, actor=actor, subject=user)
    return words
