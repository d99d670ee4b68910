"""The message tree of a conversation, and its selected path (what the thread shows and the request carries).

Each message has a `parent` (None for a first message) and a `selected` flag: among siblings (an edited question,
a regenerated answer, the columns of a comparison) the selected one is on the path. The path starts at the
selected first message and follows the selected child of each message until one has no children. Everything is
computed in Python from the conversation's rows, read in one query: a page of 500 messages costs no more queries
than a page of 5.
"""

from collections import Counter

from playground.chat.models import Message
from playground.chat.tree import ancestors, annotate, children_of, link_linear, path_of

__all__ = ["add", "ancestors", "children_of", "link_linear", "path_of", "select", "siblings", "thread"]


def thread(conversation, queryset=None) -> list[Message]:
    """The conversation's selected path, annotated, with attachments (two queries). Each answer with tool calls
    gets `path_after`, the messages after it on the path (where its tool cards find their results)."""
    rows = queryset if queryset is not None else conversation.messages.prefetch_related("attachments")
    path = path_of(list(rows))
    if queryset is None:
        for index, message in enumerate(path):
            if message.tool_calls:
                message.path_after = path[index + 1 :]
    return path


def add(conversation, parent_id: int | None, *, selected: bool = True, known: list | None = None, **fields) -> Message:
    """A new message under `parent_id` (None: a new first message). When selected, its siblings are not.

    `known`: the parent's children as the caller has just read them. Then the siblings are updated only when one
    of them is selected, and the message learns its place among them (rendering it needs no query)."""
    message = Message(conversation=conversation, parent_id=parent_id, selected=selected, **fields)
    message.explicit_parent = True
    if selected and (known is None or any(m.selected for m in known)):
        siblings(conversation, parent_id).update(selected=False)
    message.save()
    if known is not None:
        annotate(message, [*known, message])
    return message


def select(conversation, message_id: int) -> None:
    """Put a message on the selected path: it and each of its ancestors become the selected one among their
    siblings (one query for the tree, two for each level that changes)."""
    pk = getattr(conversation, "pk", conversation)
    rows = {
        row[0]: row[1:] for row in Message.objects.filter(conversation_id=pk).values_list("pk", "parent", "selected")
    }
    flagged = Counter(parent for parent, selected in rows.values() if selected)
    key, seen = message_id, set()
    while key in rows and key not in seen:
        seen.add(key)
        parent, selected = rows[key]
        if not selected or flagged[parent] > 1:
            siblings(pk, parent).exclude(pk=key).update(selected=False)
            Message.objects.filter(pk=key).update(selected=True)
        key = parent


def siblings(conversation, parent_id: int | None):
    """The queryset of the children of `parent_id` (the first messages for None) of a conversation (or its id)."""
    pk = getattr(conversation, "pk", conversation)
    if parent_id is None:
        return Message.objects.filter(conversation_id=pk, parent__isnull=True)
    return Message.objects.filter(conversation_id=pk, parent_id=parent_id)
