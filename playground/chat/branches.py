"""The message tree of a conversation, and its selected path (what the thread shows and the request carries).

Each message has a `parent` (None for a first message) and a `selected` flag: among siblings (an edited question,
a regenerated answer, the columns of a comparison) the selected one is on the path. The path starts at the
selected first message and follows the selected child of each message until one has no children. Everything is
computed in Python from the conversation's rows, read in one query: a page of 500 messages costs no more queries
than a page of 5.
"""

from collections import Counter, defaultdict
from collections.abc import Iterable

from playground.chat.models import Message


def _choose(group: list):
    """The selected sibling (the last one flagged, should several be), else the latest."""
    flagged = [m for m in group if m.selected]
    return (flagged or group)[-1]


def children_of(messages: Iterable) -> dict:
    """parent id -> children in creation order (messages must come in pk order)."""
    children = defaultdict(list)
    for message in messages:
        children[message.parent_id].append(message)
    return children


def path_of(messages: Iterable, *, annotated: bool = True) -> list:
    """The selected path through `messages` (in pk order). With `annotated`, each message on it learns its
    siblings: `sibling_ids`, `sibling_index` (1-based), `sibling_count`, `prev_sibling`, `next_sibling`, and
    `columns` (the messages of its open comparison, itself included) when it is one of those."""
    children = children_of(messages)
    path, key, seen = [], None, set()
    while children.get(key) and key not in seen:
        seen.add(key)
        group = children[key]
        chosen = _choose(group)
        if annotated:
            annotate(chosen, group)
        path.append(chosen)
        key = chosen.pk
    return path


def annotate(message, group: list) -> None:
    ids = [m.pk for m in group]
    index = ids.index(message.pk)
    message.sibling_ids = ids
    message.sibling_index = index + 1
    message.sibling_count = len(ids)
    message.prev_sibling = ids[index - 1] if index > 0 else None
    message.next_sibling = ids[index + 1] if index + 1 < len(ids) else None
    message.columns = [m for m in group if m.compare and m.compare == message.compare] if message.compare else []


def ancestors(messages: Iterable, message_id: int | None) -> list:
    """The chain from a first message down to `message_id` (included), whatever is selected; [] for None."""
    by_id = {m.pk: m for m in messages}
    chain, key = [], message_id
    while key is not None and key in by_id and len(chain) <= len(by_id):
        chain.append(by_id[key])
        key = by_id[key].parent_id
    return chain[::-1]


def last_of_path(conversation_id: int) -> int | None:
    """The id of the last message of the selected path (one light query)."""
    rows = (
        Message.objects.filter(conversation_id=conversation_id)
        .order_by("pk")
        .values_list("pk", "parent_id", "selected")
    )
    path = path_of([_Row(*row) for row in rows], annotated=False)
    return path[-1].pk if path else None


class _Row:
    __slots__ = ("compare", "parent_id", "pk", "selected")

    def __init__(self, pk, parent_id, selected):
        self.pk, self.parent_id, self.selected, self.compare = pk, parent_id, selected, ""


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


def link_linear(messages: list) -> list:
    """Chain messages given in order (each follows the one before; all selected): for code that builds a linear
    conversation in bulk, and the data migration. Returns the messages whose parent changed."""
    changed = []
    previous = None
    for message in messages:
        parent_id = previous.pk if previous is not None else None
        if message.parent_id != parent_id or not message.selected:
            message.parent_id, message.selected = parent_id, True
            changed.append(message)
        previous = message
    return changed


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
