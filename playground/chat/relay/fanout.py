"""A turn's events to the sockets that follow its conversation: in memory to those of this process, through the
channel layer to the other processes, once per process.

A socket of this process registers under its conversation's group (`follow`); the process joins the channel-layer
group once, with a channel of its own (`Inlet`: joined when the group's first local follower follows, left when
its last one leaves), and hands each event that arrives there to its local followers (`hand`, the path a local
publish takes: each socket's own inbox, in order). Sockets keep their own channels for what is addressed to them
alone (a snapshot's reply, control messages), never for a conversation's events. So a process with k sockets on a
conversation takes one copy of each event from the layer, not k. `publish` hands the event to the local sockets
first (no copy, no serialization, no thread hop) and then to the channel layer, stamped with the group and this
process's id; the inlet drops what comes back to it that way. With the in-memory layer (one process), the layer is
skipped when the group's only member is this process's inlet. Order holds for each socket: every event of a group
takes the same path to it.

The other processes get a conversation's events from this process's outbox (relay/outbox.py): the events of every
conversation published within one frame go to each other process's inlet as one message (a process that follows
none of them gets nothing). Who follows a group is read from the layer's group (Redis: its sorted set, one ZRANGE;
an inlet not renewed for outbox.STALE seconds is a dead process's and is skipped): afresh for every event but a
delta, and for a delta when the last reading is older than outbox.REFRESH or was marked because a socket of another
process asked the generation for a snapshot (control.py). Why no socket of another process misses a delta it would
take (chat tabs and share viewers take a turn's deltas only once they heard its `chat.start` or subscribed to it,
replay.py):
- It heard the start: its process's inlet was in the group when the start's publish read the members (a socket
  follows only once its inlet joined), and that reading is the one the turn's deltas use until outbox.REFRESH.
- It subscribed: it asked the generation for a snapshot; the generation marks the group before taking the
  snapshot, on its loop, so each delta is either in the snapshot or read the members afresh (held until the
  snapshot). A reading in flight when the mark is made is not kept.
- A member that joins after a reading and does neither takes no delta; it is found by the next reading anyway.
Left as before: a snapshot request that reaches no generation (its control channel not joined yet) falls back to the
database; that socket then gets deltas only from the next reading (within outbox.REFRESH), so it can miss some.
Whatever the cause (that, a frame dropped for a full channel, or a Redis restart that emptied the groups until the
inlet joins again), a socket that gets a delta whose `after` is beyond what it has asks for a snapshot again
(replay.py): a missed delta costs a snapshot, never a word. With the in-memory layer (one process) nothing goes
through the layer while the group's only member is this process's inlet.

The inlet's membership outlives what Redis keeps: it is added again by every follow, every RENEW seconds (the
layer's `group_expiry` drops members older than a day; a restarted Redis has no groups at all, and redis-py may
reconnect the blocking pop without a word) and at once after its receive failed. An event of a process of an older
version (no `group` stamp) cannot be routed and is dropped: during a rolling upgrade a tab on a new process follows
a generation on an old one through snapshots only.

The socket that asked for a turn is also its `Tab`: until the turn is announced to every socket, the generation
hands its deltas to that one alone, in memory, without waiting for the turn's rows (see relay/generation.py).
"""

import asyncio
import logging
import threading
import time
import uuid
import weakref
from collections import deque
from contextlib import asynccontextmanager

import orjson

from playground.chat.relay import outbox

log = logging.getLogger(__name__)

PROCESS = uuid.uuid4().hex  # stamps the events published by this process
ENABLED = True  # the in-memory hand-over (tests of the channel-layer path switch it off)
RENEW = 10.0  # seconds between two renewals of the inlet's memberships
RETRY = 1.0  # seconds between two tries to receive again after the channel layer failed

_followers: dict[str, weakref.WeakSet] = {}
_members = outbox.Members()  # who follows each group, as last read


class Inlet:
    """This process's channel in the groups its sockets follow, and the loop that hands what arrives there to them.
    One per channel layer and event loop (tests give each test its own of both)."""

    def __init__(self, layer, loop: asyncio.AbstractEventLoop):
        self.layer = layer
        self.loop = loop
        self.channel: str | None = None
        self.joined: set[str] = set()
        self._turns: dict[str, list] = {}  # group -> [lock, holders]: its joins and leaves reach the layer in order
        self._listening: asyncio.Task | None = None
        self._renewing: asyncio.Task | None = None
        self._popping: threading.Thread | None = None  # Redis: takes the other processes' frames (outbox.py)

    def start(self) -> None:
        """Listen and renew, or start again whichever ended. Never cancelled: a cancelled receive on the Redis
        layer can leave a blocking pop behind that swallows the next message for this process (control.py)."""
        if self._listening is None or self._listening.done():
            self._listening = self.loop.create_task(self._listen())
        if self._renewing is None or self._renewing.done():
            self._renewing = self.loop.create_task(self._renew())
        if outbox.redis(self.layer) and (self._popping is None or not self._popping.is_alive()):
            self._popping = threading.Thread(target=self._pop, name="inlet", daemon=True)
            self._popping.start()

    @asynccontextmanager
    async def _turn(self, group: str):
        turn = self._turns.setdefault(group, [asyncio.Lock(), 0])
        turn[1] += 1
        try:
            async with turn[0]:
                yield
        finally:
            turn[1] -= 1
            if not turn[1]:
                self._turns.pop(group, None)

    async def join(self, group: str) -> None:
        """Be in `group` (added again even when it was: each follow renews the membership)."""
        if self.channel is None:
            self.channel = await self.layer.new_channel() + outbox.INLET  # takes batches (outbox.py)
        self.start()
        async with self._turn(group):
            await self.layer.group_add(group, self.channel)
            self.joined.add(group)

    async def leave(self, group: str) -> None:
        """Leave `group` unless a socket of this process follows it again meanwhile."""
        async with self._turn(group):
            if group in _followers or group not in self.joined:
                return
            self.joined.discard(group)
            await self.layer.group_discard(group, self.channel)

    async def _rejoin(self) -> int:
        """Add the inlet to its groups again; how many it was no longer in, when the layer can tell."""
        lost = 0
        for group in list(self.joined):
            async with self._turn(group):
                if group not in self.joined:
                    continue
                if outbox.redis(self.layer):
                    connection = self.layer.connection(self.layer.consistent_hash(group))
                    key = self.layer._group_key(group)
                    lost += await connection.zadd(key, {self.channel: time.time()})
                    await connection.expire(key, self.layer.group_expiry)
                else:
                    await self.layer.group_add(group, self.channel)
        return lost

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(RENEW)
            try:
                lost = await self._rejoin()
            except Exception as exc:
                log.debug("The inlet could not renew its groups: %r", exc)
                continue
            if lost:
                log.warning("The inlet was missing from %d groups (a restarted Redis?): joined them again", lost)

    async def _listen(self) -> None:
        failed = False
        while True:
            try:
                if failed:
                    await self._rejoin()
                    failed = False
                message = await self.layer.receive(self.channel)
            except Exception as exc:
                if not failed:
                    log.warning("The inlet lost the channel layer (%r): it listens again when it is back", exc)
                failed = True
                await asyncio.sleep(RETRY)
                continue
            try:
                self.deliver(message)
            except Exception:
                log.exception("Could not hand a %s over to the sockets of this process", message.get("type"))

    def _pop(self) -> None:
        """The inbox read on a thread of its own, with its own event loop and Redis connection (outbox.Sender says
        why): a blocking pop answered, and the pop of the backlog after it, do not wait for turns of the process's
        busy loop; the frames are handed to that loop in one callback. Ends when the process's loop is closed."""
        asyncio.run(self._popping_frames())

    async def _popping_frames(self) -> None:
        frames: list[dict] = []
        while not self.loop.is_closed():
            try:
                frames = await outbox.pop_frames(self.layer, self.channel, wait=not frames)
            except Exception as exc:
                log.debug("The inlet could not read its inbox (%r): it tries again", exc)
                frames = []
                await asyncio.sleep(RETRY)
                continue
            if frames:
                try:
                    self.loop.call_soon_threadsafe(self._deliver_frames, frames)
                except RuntimeError:
                    return  # the process's loop closed meanwhile

    def _deliver_frames(self, frames: list[dict]) -> None:
        for frame in frames:
            try:
                self.deliver(frame)
            except Exception:
                log.exception("Could not hand a frame of another process over to the sockets of this process")

    def deliver(self, message: dict) -> None:
        if message.get("type") == "fanout.batch":  # a frame of another process's events (outbox.py)
            if "pushed" in message:  # DEBUG_RELAY_TIMING (bench/relay.py)
                popped = time.time()
                for event in message["events"]:
                    event.update(pushed=message["pushed"], popped=popped)
            for event in message["events"]:
                self.deliver(event)
            return
        group = message.pop("group", None)
        if message.pop("process", None) == PROCESS:
            return  # handed over in memory already
        if group is None:
            log.debug("An event without its group reached the inlet (a process of an older version): dropped")
            return
        for consumer in list(_followers.get(group, ())):
            consumer.hand(message)


_inlet: Inlet | None = None


def inlet(layer) -> Inlet:
    """This process's inlet on `layer` (made on first use, and again for a new layer or event loop)."""
    global _inlet
    loop = asyncio.get_running_loop()
    if _inlet is None or _inlet.layer is not layer or _inlet.loop is not loop:
        _inlet = Inlet(layer, loop)
    return _inlet


def _inlet_channel(layer) -> str | None:
    return _inlet.channel if _inlet is not None and _inlet.layer is layer else None


async def follow(group: str, consumer) -> None:
    """`consumer` follows `group` from now on: when this returns, this process is in the layer's group."""
    _followers.setdefault(group, weakref.WeakSet()).add(consumer)
    try:
        await inlet(consumer.channel_layer).join(group)
    except BaseException:
        _drop(group, consumer)
        raise


def _drop(group: str, consumer) -> bool:
    followers = _followers.get(group)
    if followers is not None:
        followers.discard(consumer)
        if not followers:
            _followers.pop(group, None)
            _members.forget(group)
            return True
    return False


async def unfollow(group: str, consumer) -> None:
    """`consumer` follows `group` no more; the process leaves the layer's group with its last follower."""
    if _drop(group, consumer):
        await inlet(consumer.channel_layer).leave(group)


def followers(group: str) -> list:
    found = _followers.get(group)
    return list(found) if found and ENABLED else []


def remote_follower(group: str) -> None:
    """A socket of another process asked for a snapshot of a turn of `group`: the next delta reads the members."""
    _members.mark(group)


async def publish(layer, group: str, event: dict, skip=None, lost=None) -> asyncio.Future | None:
    """Deliver `event` to every socket of `group` (but `skip`, a local one): queued for each local socket at once
    (none waits for another, a slow one delays nobody), then for the other processes in this process's outbox.

    An event but a delta returns once it was sent, or raises the channel layer's failure. A delta returns at once
    (its ticket, when it went to the outbox): its failure, when the frame is sent, is given to `lost`."""
    local = followers(group)
    for consumer in local:
        if consumer is not skip:
            consumer.hand(event)
    if not outbox.readable(layer):
        await layer.group_send(group, {**event, "group": group})  # a layer whose groups cannot be read
        return None
    delta = event.get("type") == "chat.delta"
    mine = _inlet_channel(layer) if local else None  # with no local follower, its own inlet hands them on
    try:
        members = await _members.get(layer, group, fresh=not delta)
    except Exception as exc:
        if delta and lost is not None:
            lost(exc)
            return None
        raise
    targets = [member for member in members if member != mine]
    if not targets:
        return None
    stamped = {**event, "group": group}
    if local:
        stamped["process"] = PROCESS
    ticket = outbox.outbox(layer).post(targets, stamped)
    if not delta:
        await ticket
    elif lost is not None:
        ticket.add_done_callback(lambda sent: sent.exception() is not None and lost(sent.exception()))
    return ticket


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

    async def stop_following(self, group: str) -> None:
        self._left = True
        if self._draining is not None:
            self._draining.cancel()
        self._inbox = None
        await unfollow(group, self)

    async def dispatch(self, message):
        # A conversation's events come by `hand` only; the socket's channel brings what is addressed to it alone.
        if message.get("type") == "websocket.receive":
            # Frames reach the database through database_sync_to_async only, which closes old connections itself.
            await self.websocket_receive(message)
        else:
            await super().dispatch(message)

    @classmethod
    async def encode_json(cls, content):
        return orjson.dumps(content).decode()
