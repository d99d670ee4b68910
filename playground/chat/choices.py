"""n > 1: the other choices of an answer, shown as tabs beside the first, and "continue with this one".

The first choice is the message's content, the thread's answer; the others are in `Message.choices` (in order of
their index). Continuing with choice k swaps it with the content, so the next request sends it as the answer:
the former answer stays among the choices, in k's place. `continue_with` is that command's operation
(commands.OPERATIONS["choose"]: the htmx view and the socket action `choose` adapt it).
"""

import logging

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import transaction

from playground.chat.models import Message
from playground.chat.relay import fanout
from playground.chat.relay.display import render_message
from playground.chat.relay.publishing import conversation_group
from playground.chat.services import branches as operations
from playground.lib.markdown.rendering import render_markdown

log = logging.getLogger(__name__)


def other_choices(message: Message) -> list[dict]:
    """The choices after the first, numbered from 2, with their sanitized HTML (empty until they arrive)."""
    texts = [text if isinstance(text, str) else "" for text in (message.choices or [])]
    texts += [""] * (message.choice_count - 1 - len(texts))
    return [{"number": i + 2, "text": text, "html": render_markdown(text)} for i, text in enumerate(texts)]


def choose(message: Message, number: int) -> Message:
    """Make choice `number` (2…n) the thread's answer; the former answer takes its place among the choices."""
    with transaction.atomic():
        message = Message.objects.select_for_update().get(pk=message.pk)
        choices = list(message.choices or [])
        if message.status == Message.STREAMING or not 2 <= number <= len(choices) + 1:
            raise ValueError(f"choice: pick one of 2 to {len(choices) + 1} of a finished answer")
        message.content, choices[number - 2] = choices[number - 2], message.content
        message.choices = choices
        message.save(update_fields=["content", "choices"])
    return message


def _choose(conversation, args: dict) -> Message:
    message = operations.message_of(conversation, args)
    if message.role != "assistant":
        raise operations.Refused("message_id: only an answer has choices to continue with.")
    try:
        number = int(args.get("number"))
    except (TypeError, ValueError):
        raise operations.Refused("number: the number of one of the answer's choices, from 2.") from None
    try:
        return choose(message, number)
    except ValueError as exc:
        raise operations.Refused(f"{exc}.") from None


async def continue_with(conversation, args: dict) -> Message:
    """Choice `number` of answer `message_id` becomes the thread's answer. The path keeps its shape, so beside the
    command's announcement (the other tabs fetch the thread) the answer's new render goes to the conversation's
    group as its final one: live viewers show it in place."""
    message = await sync_to_async(_choose)(conversation, args)
    html = await sync_to_async(render_message)(message)
    event = {"type": "chat.done", "message_id": message.pk, "seq": message.seq, "status": message.status}
    try:
        await fanout.publish(get_channel_layer(), conversation_group(conversation.pk), {**event, "html": html})
    except Exception as exc:  # the viewers see the choice when they reload
        log.warning("Could not announce the choice of message %s: %r", message.pk, exc)
    return message
