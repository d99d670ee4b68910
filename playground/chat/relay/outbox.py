"""The events this process publishes for the other processes, batched: within one outbox frame (FRAME, 4 ms), the
events of every conversation bound for one receiving process go out as one message to that process's inlet.

`Members` says which channels follow a conversation's group (the channel layer's group: every process with a
follower has its inlet there, fanout.Inlet). `Outbox.post` queues an event for some of them; the outbox's one task
sends what is queued: the first event after a pause at once, then at most one message per receiving channel per
frame (`{"type": "fanout.batch", "events": [...]}`), so a process that runs 50 generations costs each other process
one send per frame instead of one `group_send` per delta per conversation. With Redis the frame goes to the inlet's
own inbox, a list (`inbox_key`: one RPUSH, LTRIM and EXPIRE in one round trip), which the inlet empties with BLPOP
and one LPOP of what else is there (fanout.Inlet): channels-redis's `send` (four round trips) and `receive` (one
message per two or three round trips, in turn with every socket of the process) were the floor, measured: under 50
streams its receive kept a process's inlet about 1.5 s behind (docs/performance.md). Both ends run on threads of
their own, off the process's busy loop: the outbox's `Sender` and the inlet's reader. Other layers: the layer's
`send`, on the process's loop.
Per receiving channel the messages go out one frame after another, so the events of each conversation keep their
order. A member that is not an inlet (a socket of a process of an older version) gets each event alone.

Each post returns a ticket, a future done when its event was sent to every channel it was queued for, or failed
with the first error (the layer down). A full channel drops the message silently, as `group_send` does: its
process is dead or stuck, and a live one asks for a snapshot when the next event's `after` shows the gap.
"""

import asyncio
import logging
import threading
import time
from contextlib import suppress

import orjson
from channels.exceptions import ChannelFull

log = logging.getLogger(__name__)

# At most one message per receiving process per FRAME. Each generation already sends at most one delta per 16 ms
# (publishing.FRAME); the outbox only gathers what its conversations publish meanwhile, and each ms it waits is a ms
# every tab on another process waits: a 16 ms frame here cost them 9-10 ms p50 (bench/relay.py's breakdown).
FRAME = 1 / 250
INLET = ".inlet"  # the end of an inlet's channel name: a member that takes batches
REFRESH = 1.0  # seconds a delta trusts the last reading of its group's members
STALE = 30.0  # an inlet not renewed for this long (3 renewals, fanout.RENEW) belongs to a process that died
INBOX_FRAMES = 1500  # frames an inbox keeps (the oldest dropped): a stuck process catches up by snapshots
INBOX_EXPIRY = 30  # seconds an inbox outlives the last frame pushed to it


def inbox_key(layer, channel: str) -> str:
    """The Redis list that holds the frames for the inlet `channel`."""
    return f"{layer.prefix}fanout.inbox.{channel}"


def redis(layer) -> bool:
    return hasattr(layer, "_group_key") and hasattr(layer, "consistent_hash")


def readable(layer) -> bool:
    """Whether the layer's groups can be read (Redis, or the in-memory layer)."""
    return redis(layer) or isinstance(getattr(layer, "groups", None), dict)


class Members:
    """The channels in each group, as last read, and when. `mark` makes the next reading of a group fresh, and
    a reading started before a mark is used once but not kept (it may miss the member that marked it)."""

    KEEP = 512  # readings kept before the old ones are dropped (a generating process may follow no group)

    def __init__(self):
        self.known: dict[str, tuple[tuple[str, ...] | None, float]] = {}

    def mark(self, group: str) -> None:
        self.known[group] = (None, time.monotonic())

    def forget(self, group: str) -> None:
        self.known.pop(group, None)

    async def get(self, layer, group: str, fresh: bool) -> tuple[str, ...]:
        known = self.known.get(group)
        if not fresh and known is not None and known[0] is not None and time.monotonic() - known[1] < REFRESH:
            return known[0]
        asked = time.monotonic()
        members = await read(layer, group)
        known = self.known.get(group)
        if known is None or known[1] <= asked:
            if len(self.known) >= self.KEEP:
                self._prune()
            self.known[group] = (members, asked)
        return members

    def _prune(self) -> None:
        now = time.monotonic()
        for group, (_, asked) in list(self.known.items()):
            if now - asked >= REFRESH:
                del self.known[group]


async def read(layer, group: str) -> tuple[str, ...]:
    """The channels in `group`, but the inlets of processes that stopped renewing their membership."""
    groups = getattr(layer, "groups", None)
    if isinstance(groups, dict):
        return tuple(groups.get(group, ()))
    key = layer._group_key(group)
    found = await layer.connection(layer.consistent_hash(group)).zrange(key, 0, -1, withscores=True)
    oldest = time.time() - STALE
    members = ((member.decode(), score) for member, score in found)
    return tuple(member for member, score in members if score >= oldest or not member.endswith(INLET))


def _retrieved(ticket: asyncio.Future) -> None:
    if not ticket.cancelled():
        ticket.exception()  # read, so that a failure nobody awaits is not logged as never retrieved


class Outbox:
    """This process's events for the other processes' channels, on one channel layer and event loop (`loop`, where
    the tickets live). With Redis the frames leave from a thread of their own (`Sender`); else from `loop`."""

    def __init__(self, layer, loop: asyncio.AbstractEventLoop):
        self.layer = layer
        self.loop = loop
        self.lock = threading.Lock()  # the queue is filled on `loop` and emptied by the sender's thread
        self.queued: dict[str, list[dict]] = {}  # channel -> its events, in order
        self.tickets: dict[str, list[asyncio.Future]] = {}  # channel -> the tickets of its events
        self.sent_at = float("-inf")  # time.monotonic() of the last sending
        self.sends = 0  # messages sent (for the tests)
        self._sender = Sender(self) if redis(layer) else None
        self._wake = asyncio.Event()
        self._sending: asyncio.Task | None = None

    def post(self, channels, event: dict) -> asyncio.Future:
        ticket = self.loop.create_future()
        ticket.add_done_callback(_retrieved)
        if "t" in event:  # DEBUG_RELAY_TIMING: when it was posted, for bench/relay.py's breakdown
            event["posted"] = time.time()
        with self.lock:
            for channel in channels:
                self.queued.setdefault(channel, []).append(event)
                self.tickets.setdefault(channel, []).append(ticket)
        if self._sender is not None:
            self._sender.wake()
            return ticket
        self._wake.set()
        if self._sending is None or self._sending.done():
            self._sending = self.loop.create_task(self._run())
        return ticket

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self.frame()

    async def frame(self) -> None:
        """Send what is queued once a frame has passed since the last sending (at once after a pause)."""
        wait = self.sent_at + FRAME - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        self.sent_at = time.monotonic()
        try:
            await self.flush()
        except Exception:
            log.exception("The outbox could not send a frame's events")

    async def flush(self) -> None:
        """Send what is queued: one message per channel, all at once."""
        with self.lock:
            queued, tickets = self.queued, self.tickets
            self.queued, self.tickets = {}, {}
        if not queued:
            return
        results = await asyncio.gather(*(self._send(c, events) for c, events in queued.items()), return_exceptions=True)
        failed = {c: r for c, r in zip(queued, results, strict=True) if isinstance(r, BaseException)}
        if asyncio.get_running_loop() is self.loop:
            settle(tickets, failed)
        else:
            with suppress(RuntimeError):  # the loop closed: nobody waits for these tickets any more
                self.loop.call_soon_threadsafe(settle, tickets, failed)

    async def _send(self, channel: str, events: list[dict]) -> None:
        try:
            if channel.endswith(INLET):
                self.sends += 1
                frame = {"type": "fanout.batch", "events": events}
                if any("t" in event for event in events):
                    frame["pushed"] = time.time()
                if redis(self.layer):
                    await self._push(channel, orjson.dumps(frame))
                else:
                    await self.layer.send(channel, frame)
                return
            for event in events:
                self.sends += 1
                await self.layer.send(channel, event)
        except ChannelFull:
            log.debug("The channel %s is full (its process died or is stuck): a frame's events dropped", channel)

    async def _push(self, channel: str, frame: bytes) -> None:
        key = inbox_key(self.layer, channel)
        connection = self.layer.connection(self.layer.consistent_hash(channel))  # the running loop's own
        async with connection.pipeline(transaction=False) as pipe:
            pipe.rpush(key, frame)
            pipe.ltrim(key, -INBOX_FRAMES, -1)
            pipe.expire(key, INBOX_EXPIRY)
            await pipe.execute()


def settle(tickets: dict[str, list[asyncio.Future]], failed: dict[str, BaseException]) -> None:
    """Each ticket fails with its channel's error, or is done once every channel it was queued for was sent."""
    for channel, error in failed.items():
        for ticket in tickets[channel]:
            if not ticket.done():
                ticket.set_exception(error)
    for waiting in tickets.values():
        for ticket in waiting:
            if not ticket.done():
                ticket.set_result(None)


class Sender:
    """The thread that sends an outbox's frames to Redis, on an event loop of its own (channels-redis gives each
    loop its own connections). On the process's loop a frame waited for that loop's next turn twice (to start,
    then to read Redis's reply), and under 50 streams a turn is tens of milliseconds: measured, the frames left
    10-11 ms p50 and 39-60 ms p95 after they were posted (docs/performance.md). Here a frame leaves when it is due
    (7-10 ms p95); the thread needs only the GIL, which the process's thread yields at least every switch interval.
    The thread ends after IDLE seconds with nothing to send (its loop closed, its connections with it) and is
    started again by the next post."""

    IDLE = 10.0

    def __init__(self, box: Outbox):
        self.box = box
        self.lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.due: asyncio.Event | None = None
        self.thread: threading.Thread | None = None

    def wake(self) -> None:
        with self.lock:
            if self.loop is None:
                self.loop, self.due = asyncio.new_event_loop(), asyncio.Event()
                args = (self.loop, self.due)
                self.thread = threading.Thread(target=self._main, args=args, name="outbox", daemon=True)
                self.thread.start()
            loop, due = self.loop, self.due
        loop.call_soon_threadsafe(due.set)

    def _main(self, loop: asyncio.AbstractEventLoop, due: asyncio.Event) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve(due))
        finally:
            loop.close()

    async def _serve(self, due: asyncio.Event) -> None:
        while True:
            try:
                async with asyncio.timeout(self.IDLE):
                    await due.wait()
            except TimeoutError:
                with self.lock, self.box.lock:
                    if not self.box.queued:  # a post queues before it wakes: none can be left behind
                        self.loop = self.due = None  # the next post starts a new thread
                        return
            due.clear()
            await self.box.frame()


async def pop_frames(layer, channel: str, wait: bool, most: int = 500) -> list[dict]:
    """The frames in the inbox of the inlet `channel`: with `wait`, the first one to come (none after 5 s), handed
    on at once; else all that wait there (after a first one: a backlog is read in one round trip)."""
    key = inbox_key(layer, channel)
    connection = layer.connection(layer.consistent_hash(channel))
    if wait:
        first = await connection.blpop([key], timeout=5)
        found = [first[1]] if first is not None else []
    else:
        found = await connection.lpop(key, most) or []
    return [orjson.loads(raw) for raw in found]


_outbox: Outbox | None = None


def outbox(layer) -> Outbox:
    """This process's outbox on `layer` (made on first use, and again for a new layer or event loop)."""
    global _outbox
    loop = asyncio.get_running_loop()
    if _outbox is None or _outbox.layer is not layer or _outbox.loop is not loop:
        _outbox = Outbox(layer, loop)
    return _outbox
