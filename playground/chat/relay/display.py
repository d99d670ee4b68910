"""What the tabs see of an answer: its rendered HTML, and a snapshot rebuilt from the database."""

from asgiref.sync import sync_to_async

from playground.chat import branches, render_cache
from playground.chat.models import Message
from playground.lib.markdown.rendering import BlockRenderer

SNAPSHOT_TIMEOUT = 1.0  # how long a subscriber waits for the generator before reading the database


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
