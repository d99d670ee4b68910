"""What the tabs see of an answer: its rendered HTML, and a snapshot rebuilt from the database."""

from asgiref.sync import sync_to_async

from playground.chat import branches, render_cache
from playground.chat.meta import meta_of
from playground.chat.models import Message
from playground.lib.markdown.rendering import BlockRenderer

SNAPSHOT_TIMEOUT = 1.0  # how long a subscriber waits for the generator before reading the database


def placeholder_of(user_message: Message | None, assistant: Message, rows: list[Message]) -> dict | None:
    """A new turn as data, for the page to build its question and answer from the prototypes (chat/prototypes.py)
    instead of the server rendering them: None when the page could not (no question, or a question with siblings,
    whose ‹ 1/2 › the prototypes do not have, or an answer of n > 1 choices, whose tabs they do not have either).
    `rows`: the conversation's messages before the turn."""
    if user_message is None or any(row.parent_id == user_message.parent_id for row in rows):
        return None
    if assistant.choice_count > 1:
        return None
    return {
        "question": {"id": user_message.pk, "content": user_message.content, "root": user_message.parent_id is None},
        "answer": {"id": assistant.pk, "model": assistant.model_id},
    }


def render_message(message: Message) -> str:
    if not hasattr(message, "sibling_ids") and message.pk and message.role in ("user", "assistant"):
        annotate_siblings(message)
    # Through the page's cache: an answer finished here is already rendered for the next load of its page.
    return render_cache.article(message)


def annotate_siblings(message: Message) -> None:
    """What the page's path gives each message (its ‹ 2/3 › place), for a message rendered alone (one query)."""
    rows = list(
        branches.siblings(message.conversation_id, message.parent_id).only("pk", "parent", "selected", "compare")
    )
    group = [row if row.pk != message.pk else message for row in rows]
    if message in group:
        branches.annotate(message, group)


async def snapshot_from_database(message: Message) -> dict:
    """A snapshot built from what was flushed (the generator is gone or did not answer)."""
    renderer = BlockRenderer()
    blocks, tail = await sync_to_async(renderer.feed, thread_sensitive=False)(message.content)
    return {
        "type": "chat.snapshot",
        "message_id": message.pk,
        "seq": message.seq,
        "blocks": blocks,
        "tail": tail,
        "reasoning": message.reasoning,
        "content": message.content,
        "choices": list(message.choices or []),
    }


def final_html(message_id: int) -> str | None:
    """The saved answer's article, or None once it was deleted."""
    message = Message.objects.filter(pk=message_id).first()
    return None if message is None else render_message(message)


def finished_meta(message_id: int, fields: dict, body: dict) -> dict:
    """What the page needs, besides the last words, to finish a complete answer's article itself (final.js): its
    footer's rows (chat/meta.py) and its reasoning tokens, from the fields just saved (no read, no render)."""
    params = {k: v for k, v in body.items() if k not in ("model", "messages")}
    message = Message(pk=message_id, role="assistant", params=params, **fields)
    return {
        "footer": meta_of(message),
        "reasoning_tokens": message.reasoning_tokens or 0,
        "copy": bool(message.content),
    }
