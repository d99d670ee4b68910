"""The branch and compare operations by name: each is `await ACTIONS[name](conversation, user, args)`.

For a websocket `send` frame whose `action` names one of these (the htmx views in chat/branch_views.py call the
same functions). Each raises branches.Refused (words naming the field and the limit) or limits.TooBusy for input
it refuses, and Http404 for another user's conversation or message. edit, regenerate: a Turn; compare: a list of
Turns (one per column); switch, pick, insert: the Message; delete: None. New answers are announced to the
conversation's group by `chat.start` frames carrying their message ids, and their deltas carry them too. After
any of them, `branches.announce(conversation, origin)` tells the other tabs to fetch the selected path again.
"""

from playground.chat.services import branches, compare

ACTIONS = {
    "edit": branches.edit,
    "regenerate": branches.regenerate,
    "switch": branches.switch,
    "delete": branches.delete,
    "insert": branches.insert,
    "compare": compare.start,
    "pick": compare.pick,
}
