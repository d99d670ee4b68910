"""The message tree of a conversation as plain rows (anything with pk, parent_id, selected, compare): children,
ancestors and the selected path (see branches.py). No query and no model here: models and branches build on it."""

from collections import defaultdict
from collections.abc import Iterable


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
