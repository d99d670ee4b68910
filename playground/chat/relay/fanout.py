"""A turn's events to the sockets that follow its conversation: in memory to those of this process, through the
channel layer to the others.

A socket of this process registers under its conversation's group (`follow`) and is also in the channel-layer
group. `publish` hands the event to the local sockets first (each socket's own inbox: no copy, no serialization,
no thread hop) and then to the channel layer, stamped with this process's id; a local socket drops what comes
back to it that way (`LocalFollower.dispatch`). With the in-memory layer (one process), the layer is skipped when
every member of the group is local. Order holds for each socket: every event of a group takes the same path to it.

With the Redis layer, a delta (`chat.delta`, the bulk of the traffic) goes through Redis only while some member of
the group is not a socket of this process: otherwise every process would pull its own deltas back from Redis.
Whether one is (`_remote`) is asked of Redis (the group's sorted set, one ZRANGE) after each other event of the
group is sent, when a delta finds the answer older than REFRESH, and set at once when a socket of another process
asks the generation for a snapshot (control.py). Every other event (start, done, waiting...) always goes through
Redis. Why no socket of another process misses a delta it would take (chat tabs and share viewers take a turn's
deltas only once they heard its `chat.start` or subscribed to it, replay.py):
- It heard the start: it was in the group when the start's group_send read the members, so it is seen by the check
  made after that send, before the turn is announced to the generation (start_turn), hence before its deltas.
- It subscribed: it asked the generation for a snapshot; the generation marks the group before taking the
  snapshot, on its loop, so each delta is either in the snapshot or sent through Redis (held until the snapshot).
- A check in flight never overwrites a mark made meanwhile (the mark is newer than the check's question).
- A member that joins after a check and does neither takes no delta; it is found by the next check anyway.
Left as before: a snapshot request that reaches no generation (its control channel not joined yet) falls back to the
database; that socket then gets deltas through Redis only from the next check (within REFRESH), so it can miss some.
Whatever the cause (that, or Redis dropping a message for a full channel), a socket that gets a delta whose `after`
is beyond what it has asks for a snapshot again (replay.py): a missed delta costs a snapshot, never a word.

The socket that asked for a turn is also its `Tab`: until the turn is announced to every socket, the generation
hands its deltas to that one alone, in memory, without waiting for the turn's rows (see relay/generation.py).
"""

import asyncio
import logging
import time
import uuid
import weakref
from collections import deque

import orjson

log = logging.getLogger(__name__)

PROCESS = uuid.uuid4().hex  # stamps the events published by this process
ENABLED = True  # the in-memory hand-over (tests of the channel-layer path switch it off)
REFRESH = 1.0  # seconds a delta trusts the last answer to "does a member of the group live elsewhere?"

_followers: dict[str, weakref.WeakSet] = {}
_remote: dict[str, tuple[bool, float]] = {}  # group -> (a member is not a socket of this process, asked at)


def follow(group: str, consumer) -> None:
    _followers.setdefault(group, weakref.WeakSet()).add(consumer)


def unfollow(group: str, consumer) -> None:
    followers = _followers.get(group)
    if followers is not None:
        followers.discard(consumer)
        if not followers:
            _followers.pop(group, None)
            _remote.pop(group, None)


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


def remote_follower(group: str) -> None:
    """A socket of another process asked for a snapshot of a turn of `group`: its deltas go through the layer."""
    _remote[group] = (True, time.monotonic())


def _redis(layer) -> bool:
    return hasattr(layer, "_group_key") and hasattr(layer, "consistent_hash")


async def _check(layer, group: str, local: list) -> bool:
    """Ask Redis whether a member of the group is not one of the `local` sockets."""
    asked = time.monotonic()
    key = layer._group_key(group)
    members = await layer.connection(layer.consistent_hash(group)).zrange(key, 0, -1)
    names = {consumer.channel_name for consumer in local}
    found = any(member.decode() not in names for member in members)
    known = _remote.get(group)
    if found or known is None or known[1] < asked:  # a mark made while we asked stays
        _remote[group] = (found, asked)
    return _remote[group][0]


async def _remote_members(layer, group: str, local: list) -> bool:
    if not _redis(layer):
        return True
    known = _remote.get(group)
    if known is not None and time.monotonic() - known[1] < REFRESH:
        return known[0]
    try:
        return await _check(layer, group, local)
    except Exception:
        return True  # the group_send that follows raises to the caller if Redis is down


async def publish(layer, group: str, event: dict, skip=None) -> None:
    """Deliver `event` to every socket of `group` (but `skip`, a local one): queued for each local socket at once
    (none waits for another, a slow one delays nobody), then to the channel layer, whose failure is raised."""
    local = followers(group)
    for consumer in local:
        if consumer is not skip:
            consumer.hand(event)
    if _all_local(layer, group, local):
        return
    delta = event.get("type") == "chat.delta"
    if local:
        if delta and not await _remote_members(layer, group, local):
            return
        event = {**event, "origin": PROCESS}
    await layer.group_send(group, event)
    if local and not delta and _redis(layer):
        # After the send: every socket it reached is in the group now, so the deltas that follow reach it too.
        try:
            await _check(layer, group, local)
        except Exception:
            _remote.pop(group, None)


def delivered() -> bool:
    """Whether every event handed to a socket of this process was sent (no inbox holds one): the drain waits for
    this before it closes the sockets (lib/drain.py)."""
    for group in list(_followers.values()):
        for consumer in list(group):
            if consumer._inbox or (consumer._draining is not None and not consumer._draining.done()):
                return False
    return True


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

    def bound(self, message_id: int, seq: int) -> None:
        """The turn is announced: the deltas the tab got alone went up to `seq` (some carried no message id)."""
        consumer = self.consumer
        if consumer is not None:
            consumer.hand({"type": "chat.bound", "message_id": message_id, "seq": seq})


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
