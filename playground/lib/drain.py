"""Graceful drain: what a server process does between a SIGTERM and its exit (docs/operations.md, "Rolling restart").

On the first SIGTERM the process drains:
- its readiness probe answers 503 at once (health.py), so the balancer sends it nothing new;
- it refuses new work politely: a send or a retry answers "this server is restarting" with status 503 and saves
  nothing (the balancer may retry it on another process), a new websocket is accepted and closed at once with
  RECONNECT, the batch poller claims nothing, an evaluation run or a speech clip is refused;
- what runs goes on: generations, speech clips, evaluation runs and local batches (the background-work registry,
  lib/detached.py) and HTTP requests in flight, for up to PLAYGROUND_DRAIN_SECONDS (a live evaluation run sends no
  new cell: once its cells in flight are answered it is let go of, and another process takes it up:
  evaluate/resume.py);
- then it closes its open websockets with RECONNECT (the page reconnects at once, through the balancer, to another
  process, and follows any answer still running there as a second tab does) and exits.

At the end of the grace period, or on a second SIGTERM, what is left ends as a SIGTERM always ended it, only saved
first: each job is cancelled (an answer ends interrupted with everything that arrived, a clip incomplete with its
bytes, a batch is resumed by another process), then the reactor stops.

Daphne runs Twisted's reactor with its signal handlers (SIGTERM: stop the reactor). `install()` puts this hook in
front of Twisted's once the reactor runs and hands over to it at the end, so the shutdown triggers still run.
"""

import asyncio
import logging
import signal
import sys
import time

from django.conf import settings

from playground.lib import detached

log = logging.getLogger(__name__)

RECONNECT = 4012  # websocket close code: "this process is going away, reconnect now" (static/js/chat/socket.js)
LEASE = "lease"  # gate leases belong to the jobs that hold them: they are not work of their own
REFUSAL = "This server is restarting, so nothing was started or saved. Try again in a moment."
SEND_REFUSAL = (
    "This server is restarting, so nothing was sent or saved. Your message is still here: send it again in a moment."
)
SETTLE_SECONDS = 5  # after the grace period: how long the cancelled jobs get to save what they had

_state = {"draining": False, "hard": False, "since": None}
_sockets: dict[int, object] = {}  # id -> the ASGI `send` of an open websocket
_requests = {"in_flight": 0}
_wake: asyncio.Event | None = None
_ready_to_close: list = []  # predicates: the sockets may be closed (the apps' events to them were sent)
QUIET_SECONDS = 0.5  # after the work: events on their way to the sockets (from this process or the layer) arrive


def draining() -> bool:
    return _state["draining"]


def grace_seconds() -> float:
    return settings.DRAIN_SECONDS


def work() -> list[tuple[str, object]]:
    """What this process still runs: the registry's jobs (but leases) and the HTTP requests in flight."""
    jobs = [(kind, key) for (kind, key) in list(detached._jobs) if kind != LEASE]
    return jobs + [("http", n) for n in range(_requests["in_flight"])]


# ---------------------------------------------------------------- the ASGI side


def watch(app):
    """An ASGI wrapper: counts the HTTP requests in flight, keeps each open websocket's `send` so the drain can close
    it, and refuses a websocket opened during the drain (accepted, then closed with RECONNECT)."""

    async def watched(scope, receive, send):
        if scope["type"] == "http":
            _requests["in_flight"] += 1
            try:
                return await app(scope, receive, send)
            finally:
                _requests["in_flight"] -= 1
                _poke()
        if scope["type"] != "websocket":
            return await app(scope, receive, send)
        if draining():
            await receive()  # websocket.connect
            await send({"type": "websocket.accept"})
            await send({"type": "websocket.close", "code": RECONNECT})
            return None
        key = id(send)
        _sockets[key] = send
        try:
            return await app(scope, receive, send)
        finally:
            _sockets.pop(key, None)
            _poke()

    return watched


def _poke() -> None:
    if _wake is not None:
        _wake.set()


def before_closing(ready) -> None:
    """`ready()` says whether the sockets may be closed now (an app's events to them are all sent)."""
    _ready_to_close.append(ready)


async def close_sockets(wait: float = 2) -> int:
    """Close every open websocket with RECONNECT, once what was on its way to them is sent (up to `wait` s), and
    wait (up to `wait` s more) for their consumers to let go."""
    await asyncio.sleep(QUIET_SECONDS if _sockets else 0)
    await _until(lambda: all(ready() for ready in _ready_to_close), time.monotonic() + wait)
    count = 0
    for send in list(_sockets.values()):
        try:
            await send({"type": "websocket.close", "code": RECONNECT})
            count += 1
        except Exception as exc:  # closed by its client meanwhile
            log.debug("drain: a socket was already closed: %r", exc)
    await _until(lambda: not _sockets, time.monotonic() + wait)
    return count


async def _until(done, deadline: float) -> None:
    """Wait until `done()` or the deadline, looking again whenever a request or a socket ends (and 4 times a s)."""
    global _wake
    if _wake is None:
        _wake = asyncio.Event()
    while not done() and time.monotonic() < deadline:
        _wake.clear()
        try:
            await asyncio.wait_for(_wake.wait(), timeout=min(0.25, max(0.01, deadline - time.monotonic())))
        except TimeoutError:
            pass


# ---------------------------------------------------------------- the drain


async def drain(*, grace: float | None = None) -> None:
    """Let the work in flight finish (up to `grace` s, or until a second SIGTERM), end what is left, close the
    sockets. Returns when nothing is left; the caller stops the process."""
    grace = grace_seconds() if grace is None else grace
    log.warning("SIGTERM: draining, %d jobs and requests in flight (up to %g s)", len(work()), grace)
    await _until(lambda: not work() or _state["hard"], time.monotonic() + grace)
    left = [(kind, key) for kind, key in work() if kind != "http"]
    if left:
        log.warning("drain: ending %d jobs still running: %s", len(left), left)
        await interrupt(left)
    closed = await close_sockets()
    log.warning("drain: done after %.1f s; %d websockets told to reconnect", time.monotonic() - _since(), closed)


async def interrupt(jobs: list[tuple[str, object]]) -> None:
    """Cancel these jobs as a shutdown does (an answer ends interrupted, not stopped) and let them save."""
    tasks = []
    for kind, key in jobs:
        job = detached.get(kind, key)
        task = getattr(job, "task", None) or job  # a Generation or a Relay keeps its task; the others are one
        if isinstance(task, asyncio.Task):
            task.cancel()
            tasks.append(task)
    if tasks:
        await asyncio.wait(tasks, timeout=SETTLE_SECONDS)


def _since() -> float:
    return _state["since"] or time.monotonic()


def begin() -> bool:
    """Mark the process draining; False when it already was (a second SIGTERM: end now)."""
    if _state["draining"]:
        _state["hard"] = True
        _poke()
        return False
    _state.update(draining=True, since=time.monotonic())
    return True


def reset() -> None:
    """Tests: back to serving (and no wake-up event of a loop that may be gone)."""
    global _wake
    _state.update(draining=False, hard=False, since=None)
    _wake = None


# ---------------------------------------------------------------- the signal


def install() -> None:
    """Under daphne: chain this drain in front of Twisted's SIGTERM handler once the reactor runs."""
    if "daphne.server" not in sys.modules and "daphne.cli" not in sys.modules:
        return
    reactor = sys.modules.get("twisted.internet.reactor")
    if reactor is None or not hasattr(reactor, "callWhenRunning"):
        return
    reactor.callWhenRunning(_hook, reactor)


def _hook(reactor) -> None:
    previous = signal.getsignal(signal.SIGTERM)

    def stop() -> None:
        if callable(previous):
            previous(signal.SIGTERM, None)  # Twisted's: stops the reactor (its shutdown triggers run)
        else:
            reactor.stop()

    async def drained() -> None:
        try:
            await drain()
        except Exception:
            log.exception("drain failed; stopping now")
        stop()

    def on_loop() -> None:
        if begin():
            detached.spawn(drained(), name="drain")
        else:
            log.warning("second SIGTERM: ending what is left now")

    def handler(signum, frame) -> None:
        reactor.callFromThread(on_loop)

    signal.signal(signal.SIGTERM, handler)
