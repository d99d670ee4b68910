"""A turn's events to the sockets that follow its conversation: in memory to those of this process, through the
channel layer to the others.

A socket of this process registers under its conversation's group (`follow`) and is also in the channel-layer
group. `publish` hands the event to the local sockets first (each socket's own inbox: no copy, no serialization,
no thread hop) and then to the channel layer, stamped with this process's id; a local socket drops what comes
back to it that way (`LocalFollower.dispatch`). With the in-memory layer (one process), the layer is skipped when
every member of the group is local. Order holds for each socket: every event of a group takes the same path to it.

The socket that asked for a turn is also its `Tab`: until the turn is announced to every socket, the generation
hands its deltas to that one alone, in memory, without waiting for the turn's rows (see relay/generation.py).
"""

import asyncio
import logging
import uuid
import weakref
from collections import deque

import orjson

log = logging.getLogger(__name__)

PROCESS = uuid.uuid4().hex  # stamps the events published by this process
ENABLED = True  # the in-memory hand-over (tests of the channel-layer path switch it off)

_followers: dict[str, weakref.WeakSet] = {}


def follow(group: str, consumer) -> None:
    _followers.setdefault(group, weakref.WeakSet()).add(consumer)


def unfollow(group: str, consumer) -> None:
    followers = _followers.get(group)
    if followers is not None:
        followers.discard(consumer)
        if not followers:
            _followers.pop(group, None)


def followers(group: str) -> list:
    found = _followers.get(group)
    return list(found) if found and ENABLED else []


def _all_local(layer, group: str, local: list) -> bool:
    """True when the layer is the in-memory one and each member of the group is a socket of this list."""
    groups = getattr(layer, "groups", None)
    if not local or not isinstance(groups, dict):
        return False
    names = {consumer.channel_name for consumer in local}
    return all(channel in names for channel in groups.get(group, ()))


async def publish(layer, group: str, event: dict, skip=None) -> None:
    """Deliver `event` to every socket of `group` (but `skip`, a local one): queued for each local socket at once
    (none waits for another, a slow one delays nobody), then to the channel layer, whose failure is raised."""
    local = followers(group)
    for consumer in local:
        if consumer is not skip:
            consumer.hand(event)
    if _all_local(layer, group, local):
        return
    if local:
        event = {**event, "origin": PROCESS}
    await layer.group_send(group, event)


class Tab:
    """The socket that asked for a turn, and its id for the ask (`action`): the generation's deltas before the
    turn is announced go to it alone, as `chat.early` events in its inbox (after any event handed to it before).
    They carry the message id once the rows are written (None before); the tab puts them in the placeholder
    that the ask's `sent` reply brings. A socket that closed meanwhile gets nothing."""

    def __init__(self, consumer: "LocalFollower", action: str):
        self._consumer = weakref.ref(consumer)
        self.action = action

    @property
    def consumer(self) -> "LocalFollower | None":
        return self._consumer()

    def hand(self, event: dict) -> None:
        consumer = self.consumer
        if consumer is not None:
            consumer.hand({**event, "type": "chat.early", "action": self.action})


class LocalFollower:
    """A mixin of the consumers that follow a conversation (before AsyncJsonWebsocketConsumer in the bases).

    Events handed over in memory wait in the socket's own inbox and are handled in order by one task at a time,
    so a socket whose handler queries the database (a share viewer rendering a new turn) holds up only itself.
    """

    _inbox: deque | None = None
    _draining: asyncio.Task | None = None
    _left = False  # stopped following: its socket is closing

    def hand(self, event: dict) -> None:
        if self._left:
            return
        if self._inbox is None:
            self._inbox = deque()
        self._inbox.append(event)
        if self._draining is None or self._draining.done():
            self._draining = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        inbox = self._inbox
        while inbox:
            event = inbox.popleft()
            try:
                await getattr(self, event["type"].replace(".", "_"))(event)
            except Exception:
                log.exception("Could not hand %s over to a socket of this process", event.get("type"))

    def stop_following(self, group: str) -> None:
        self._left = True
        unfollow(group, self)
        if self._draining is not None:
            self._draining.cancel()
        self._inbox = None

    async def dispatch(self, message):
        if message.get("origin") == PROCESS:
            return  # handed over in memory already
        kind = message.get("type")
        if kind == "chat.delta":
            # Deltas touch no database: skip the per-message thread hop of close_old_connections.
            await self.chat_delta(message)
        elif kind == "websocket.receive":
            # Frames reach the database through database_sync_to_async only, which closes old connections itself.
            await self.websocket_receive(message)
        else:
            await super().dispatch(message)

    @classmethod
    async def encode_json(cls, content):
        return orjson.dumps(content).decode()
