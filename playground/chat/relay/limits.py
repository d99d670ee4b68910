"""How long a generation waits for a provider, what it says when the provider is too slow or refuses a field (or the
playground fails), and how many answers one user may have generating at once."""

import asyncio
import os
from dataclasses import dataclass, field
from functools import cache
from typing import Protocol

from playground.connections.gate import Pass, Refused
from playground.connections.models import Connection
from playground.lib.prepared import Prepared
from playground.upstream.errors import UpstreamError


class Progress(Protocol):
    """What pacing reads of an answer (relay/answer.py): whether it started, and how far."""

    first_token: object
    tool_calls: list
    chunks: int


_END = object()


def rejects_stream_options(error: UpstreamError) -> bool:
    """A 400 whose message names stream_options or include_usage: the provider does not take them."""
    text = (error.message or "").lower()
    return error.status in (400, 422) and ("stream_options" in text or "include_usage" in text)


@dataclass
class Limits:
    """How long a generation waits for its first token and then between chunks (from its connection)."""

    first_token: float = 120
    idle: float = 60
    connection_id: int | None = None
    # The gate's pass of this request: the generation settles it with the provider's usage when it ends.
    ticket: Pass | None = field(default=None, compare=False, repr=False)
    # Every slot of the connection was taken: (connection, user id) to open the gate with once one is free.
    queued: tuple | None = field(default=None, compare=False, repr=False)

    def no_answer(self) -> UpstreamError:
        return UpstreamError(
            kind="timeout",
            message=f"No first token after {_seconds(self.first_token)}: the provider accepted the request but "
            "has not started answering. Retry, or raise the first-token timeout of the connection.",
        )

    def silent(self, received: int) -> UpstreamError:
        return UpstreamError(
            kind="timeout",
            message=f"The provider sent nothing for {_seconds(self.idle)} after {received} chunks, so the answer "
            "was ended; what arrived is kept. Retry, or raise the idle timeout of the connection.",
        )

    async def paced(self, stream, answer: Progress, first: asyncio.Timeout):
        """The stream's chunks, a network read's worth at a time (a list); after the first token, a silence
        longer than the idle timeout ends it in words. One watchdog per generation watches the silences (`Idle`):
        a read costs a clock reading, not a timeout of its own (200 streams read thousands of times a second)."""
        batches = aiter(stream.batches())
        watchdog: Idle | None = None
        try:
            while True:
                if watchdog is None and (answer.first_token is not None or bool(answer.tool_calls)):
                    first.reschedule(None)
                    watchdog = Idle(self.idle)
                try:
                    batch = await anext(batches, _END)
                except asyncio.CancelledError:
                    if watchdog is not None and watchdog.fired:
                        asyncio.current_task().uncancel()
                        raise self.silent(answer.chunks) from None
                    raise
                if batch is _END:
                    return
                if watchdog is not None:
                    watchdog.heard()
                yield batch
        finally:
            if watchdog is not None:
                watchdog.close()


class Idle:
    """The idle timeout of one generation's upstream reads: a timer that wakes once per `seconds` (or later) and
    cancels the reading task when nothing was heard for that long (`fired` tells that cancel from a Stop's)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.loop = asyncio.get_running_loop()
        self.task = asyncio.current_task()
        self.last = self.loop.time()
        self.fired = False
        self.timer = self.loop.call_at(self.last + seconds, self._check)

    def heard(self) -> None:
        self.last = self.loop.time()

    def _check(self) -> None:
        due = self.last + self.seconds
        if self.loop.time() < due:
            self.timer = self.loop.call_at(due, self._check)
            return
        self.fired = True
        self.task.cancel()

    def close(self) -> None:
        self.timer.cancel()


def internal_error(exc: Exception, trace_id: str = "") -> dict:
    """A failure of the playground itself, in the shape of an UpstreamError's as_dict()."""
    return {
        "kind": "internal",
        "status": None,
        "code": None,
        "title": "The playground failed",
        "message": f"{type(exc).__name__}: {exc}",
        "next_step": "Retry; if it persists, check the server log.",
        "limit_type": None,
        "retry_after": None,
        "retryable": True,
        "trace_id": trace_id,
    }


def _seconds(value: float) -> str:
    return f"{value:g} s"


def limits_of(connection: Connection, ticket: Pass | None = None) -> Limits:
    return Limits(
        first_token=connection.first_token_timeout or 120,
        idle=connection.idle_timeout or 60,
        connection_id=connection.pk,
        ticket=ticket,
    )


# Answers one user may have generating at once (a comparison of four counts four); a load test raises it.
MAX_RUNNING_PER_USER = int(os.environ.get("PLAYGROUND_MAX_ANSWERS_PER_USER", "8"))


class TooBusy(Refused):
    """Starting these generations would exceed the user's limit of answers generating at once: a refusal like the
    gate's own (nothing sent, nothing saved), so every command that opens the gate answers it the same way."""

    title = "Not sent: too many answers generating at once"
    next_step = "Wait for some to finish or stop them."

    def __init__(self, message: str, *, in_use: int, limit: int):
        super().__init__("capacity", message, in_use=in_use, limit=limit)
        self.status = 429


@cache
def _running() -> Prepared:
    from playground.chat.models import Message

    return Prepared(
        lambda user: Message.objects.filter(conversation__owner_id=user, status=Message.STREAMING).values("pk"),
        user=int,
    )


def check_capacity(user_id: int, adding: int) -> None:
    """Raise TooBusy unless `adding` more generations fit in the user's limit (sync: one count query). Every turn
    passes here (services/turns.py open_turns), before the gate is opened for it."""
    running = _running().count(user=user_id)
    if running + adding > MAX_RUNNING_PER_USER:
        raise TooBusy(
            f"{running} answers are generating and this starts {adding} more; the limit is {MAX_RUNNING_PER_USER} "
            "at once. Wait for some to finish or stop them.",
            in_use=running,
            limit=MAX_RUNNING_PER_USER,
        )
