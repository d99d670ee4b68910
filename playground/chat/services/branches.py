"""Branch operations on a conversation's message tree: edit and resend, regenerate, switch, delete, insert.

Each is a plain function `(conversation, args)` (args: a dict of the posted fields, as a view or a websocket frame
gives them) over a conversation the command (commands.operate) read as the user's own: ownership is checked there,
once. Bad input raises Refused with words naming the field and the limit; a message of another conversation is an
Http404.
"""

import asyncio
import logging

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import transaction
from django.http import Http404

from playground import inputs
from playground.chat import branches
from playground.chat.forms import MESSAGE_LIMIT
from playground.chat.models import Conversation, Message
from playground.chat.relay import fanout
from playground.chat.relay.publishing import conversation_group
from playground.chat.services.turns import Turn, launcher, prepare_turn, start_turn

log = logging.getLogger(__name__)

ROLES = ("system", "user", "assistant", "tool")


class Refused(Exception):
    """The operation is not possible as asked; the words say why (the field and the limit)."""


def message_of(conversation: Conversation, args: dict, name: str = "message_id") -> Message:
    try:
        pk = int(args.get(name))
    except (TypeError, ValueError):
        raise Refused(f"{name}: expected the id of a message of this conversation.") from None
    message = conversation.messages.filter(pk=pk).first()
    if message is None:
        raise Http404("No such message.")
    return message


def content_of(args: dict, *, required: bool = True) -> str:
    content = args.get("content")
    content = content if isinstance(content, str) else ""
    if required and not content.strip():
        raise Refused("content: write the message (it cannot be empty).")
    try:
        return inputs.text(content, "content", limit=MESSAGE_LIMIT)
    except inputs.InputError as exc:
        raise Refused(f"{exc}.") from None


async def _turn(conversation: Conversation, content: str | None, **where) -> Turn:
    launch = launcher(asyncio.get_running_loop())
    turn = await sync_to_async(prepare_turn)(conversation, content, launch=launch, **where)
    await start_turn(turn)
    return turn


async def announce(conversation: Conversation, origin: str = "") -> None:
    """Tell the conversation's other tabs that its thread changed shape (they fetch the selected path again);
    `origin` names the tab that made the change, which has the new thread already."""
    try:
        await fanout.publish(
            get_channel_layer(), conversation_group(conversation.pk), {"type": "chat.thread", "origin": origin[:64]}
        )
    except Exception as exc:  # the other tabs see the change when they reload
        log.warning("Could not announce the new thread of conversation %s: %r", conversation.pk, exc)


# ---------------------------------------------------------------- operations


async def edit(conversation: Conversation, args: dict) -> Turn:
    """Resend an edited user message: a sibling of the original, whose continuation stays on its branch."""
    original = await sync_to_async(message_of)(conversation, args)
    if original.role != "user":
        raise Refused("message_id: only a user message can be edited and resent.")
    content = content_of(args)
    kept = await sync_to_async(list)(original.attachments.all())
    return await _turn(conversation, content, parent=original.parent_id, kept=kept)


async def regenerate(conversation: Conversation, args: dict) -> Turn:
    """A new answer beside an existing one (a sibling), from the same path up to its question."""
    answer = await sync_to_async(message_of)(conversation, args)
    if answer.role != "assistant":
        raise Refused("message_id: only an answer can be regenerated.")
    if answer.parent_id is None:
        raise Refused("message_id: this answer starts the thread; there is nothing before it to answer.")
    return await _turn(conversation, None, parent=answer.parent_id)


def _switch(conversation: Conversation, args: dict) -> Message:
    message = message_of(conversation, args)
    with transaction.atomic():
        branches.select(conversation, message.pk)
    message.selected = True
    return message


async def switch(conversation: Conversation, args: dict) -> Message:
    """Show another sibling (‹ 2/3 ›) in place; the choice is saved, and the requests follow it."""
    return await sync_to_async(_switch)(conversation, args)


def _delete(conversation: Conversation, args: dict) -> None:
    message = message_of(conversation, args)
    if message.status == Message.STREAMING:
        raise Refused("message_id: the answer is still being generated; stop it first.")
    with transaction.atomic():
        children = Message.objects.filter(parent_id=message.pk)
        if not message.selected:
            children.update(selected=False)  # they join a group whose selected member stays selected
        children.update(parent_id=message.parent_id)
        message.delete()


async def delete(conversation: Conversation, args: dict) -> None:
    """Delete one message; what followed it follows its parent (the rest of every branch is kept)."""
    await sync_to_async(_delete)(conversation, args)


def _insert(conversation: Conversation, args: dict) -> Message:
    role = args.get("role")
    if role not in ROLES:
        raise Refused(f"role: one of {', '.join(ROLES)}.")
    content = content_of(args)
    after = None if args.get("after") in (None, "", 0, "0") else message_of(conversation, args, "after").pk
    with transaction.atomic():
        # The new message takes the place of `after`'s children (or of the first messages), which follow it.
        below = list(branches.siblings(conversation, after).values_list("pk", flat=True))
        message = Message(conversation=conversation, parent_id=after, selected=True, role=role, content=content)
        message.explicit_parent = True
        message.save()
        Message.objects.filter(pk__in=below).update(parent_id=message.pk)
    return message


async def insert(conversation: Conversation, args: dict) -> Message:
    """Insert a message of any role after `after` (empty: at the start), e.g. a few-shot example."""
    return await sync_to_async(_insert)(conversation, args)
