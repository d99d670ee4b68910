"""The Generation relay: one answer streamed from the upstream in a task of the server process that started it.

It numbers each delta, publishes coalesced deltas to the channel-layer group `conversation.<pk>` and flushes
what arrived to the database every second. Until its turn is announced (the rows written, the placeholder sent),
a generation started by a socket's ask hands its deltas to that socket alone (`tab`, fanout.Tab): the first
words need not wait for the rows. The other tabs get them after the start, in one delta (`announce`).

With a channel layer shared by several processes it also listens on its own channel, reachable through the group
`generation.<message pk>`, so any websocket on any process can ask it for a snapshot or tell it to stop.
"""

import asyncio
import logging
import threading
import time
from contextlib import suppress

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from playground.chat.models import Message
from playground.chat.relay import control, fanout, persistence
from playground.chat.relay.answer import Answer, Unsent
from playground.chat.relay.control import generation_group
from playground.chat.relay.display import final_html, finished_meta
from playground.chat.relay.limits import Limits, internal_error, rejects_stream_options
from playground.chat.relay.publishing import Live, conversation_group
from playground.connections import gate
from playground.connections.models import Connection
from playground.lib import detached, metrics
from playground.upstream import client
from playground.upstream.client import Endpoint
from playground.upstream.errors import UpstreamError

log = logging.getLogger(__name__)

KIND = "chat"  # generations in the background-work registry (playground/lib/detached.py), keyed by message pk
LIVE_LOST_NOTICE = "This tab may have missed live deltas; the saved answer is complete."


def running(message_id: int) -> "Generation | None":
    """The generation of this message if it runs in this process."""
    return detached.get(KIND, message_id)


def _from(part: str, name: str, *, writable: bool = False) -> property:
    """A name of one of the generation's parts, read (and written) through the generation."""

    def get(generation):
        return getattr(getattr(generation, part), name)

    def put(generation, value):
        setattr(getattr(generation, part), name, value)

    return property(get, put if writable else None)


class Generation:
    """One answer's life: the upstream call, and its parts given the state they work on: `answer` (what arrived,
    answer.py), `live` (what the tabs were shown, publishing.py), the rows written from the answer
    (persistence.py) and the control channel that reaches the live view and the stop (control.py)."""

    def __init__(
        self,
        endpoint: Endpoint,
        body: dict,
        *,
        headers: dict | None = None,
        loop=None,
        limits: Limits | None = None,
        tab: fanout.Tab | None = None,
    ):
        # The request, as the gate let it through (the endpoint once a queued pass opens, the body without
        # stream_options for a provider that refuses them).
        self.endpoint = endpoint
        self.body = body
        self.headers = headers or {}
        self.limits = limits or Limits()
        self.replaces: int | None = None  # a retried answer, deleted once this one is complete
        self.whole_final = False  # its tabs need the final article whole (a compare column: start_turn sets it)
        # Its state, one object a part.
        self.answer = Answer(Unsent(timing=settings.DEBUG_RELAY_TIMING))
        self.live = Live(self.answer, tab)
        # Its life cycle.
        self.loop = loop
        self.task: asyncio.Task | None = None
        self.work: asyncio.Task | None = None  # the upstream call
        self.requested = asyncio.Event()  # the request is written: the provider is working on it
        self.written = threading.Event()  # the same, for the thread that writes the rows (or the call ended first)
        self.stop_requested = False
        self._bound: asyncio.Future | None = None  # the assistant row exists (bind)
        self._said_waiting: tuple[int, int] | None = None

    # What the sockets, the commands and the tests read of it; the state itself is in its parts.
    message_id = _from("answer", "message_id", writable=True)
    conversation_id = _from("answer", "conversation_id", writable=True)
    tool_calls = _from("answer", "tool_calls", writable=True)
    seq = _from("answer", "seq")
    content = _from("answer", "content")
    usage = _from("answer", "usage")
    finish_reason = _from("answer", "finish_reason")
    trace_id = _from("answer", "trace_id")
    chunks = _from("answer", "chunks")
    tab = _from("live", "tab")
    published_seq = _from("live", "seq")
    live_lost = _from("live", "lost")
    closing = _from("live", "closing")  # ending: nothing more is published but its final event

    # -- life cycle (begin, bind and abort run on the event loop)

    def begin(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._bound = self.loop.create_future()
        self.task = detached.spawn(self.run(), name="generation")

    def bind(self, message_id: int, conversation_id: int) -> None:
        self.answer.message_id, self.answer.conversation_id = message_id, conversation_id
        detached.track(KIND, message_id, self)
        self.task.set_name(f"generation-{message_id}")
        if not self._bound.done():
            self._bound.set_result(None)

    def bind_threadsafe(self, message: Message) -> None:
        self.loop.call_soon_threadsafe(self.bind, message.pk, message.conversation_id)

    def abort_threadsafe(self) -> None:
        self.loop.call_soon_threadsafe(self._abort)

    def _abort(self) -> None:
        self.task.cancel()
        # A task cancelled before its first step runs none of its code: its lease is given back here.
        detached.spawn(self._release_ticket(), name="release-lease")

    def announce(self) -> None:
        self.live.announce()

    def _request_written(self) -> None:
        self.requested.set()
        self.written.set()

    def wait_written(self, seconds: float) -> None:
        """In the thread that launched it: wait (at most `seconds`) until the request is written, so that the
        rows are written while the provider works on the first token, not while the call is being made."""
        self.written.wait(seconds)

    def snapshot(self) -> dict:
        return self.live.snapshot()

    def lost_live(self, exc: BaseException) -> None:
        self.live.lost_live(exc)

    # -- control

    def stop(self) -> None:
        self.stop_requested = True
        if self.work is not None and not self.work.done():
            self.work.cancel()

    cancel = stop  # detached.cancel(KIND, pk)

    # -- the upstream call

    async def _call(self) -> None:
        try:
            await self._request()
        finally:
            self.written.set()

    async def _request(self) -> None:
        if self.stop_requested:
            raise asyncio.CancelledError
        if self.limits.ticket is None and self.limits.queued is not None:
            connection, user_id = self.limits.queued
            self.limits.ticket = await gate.aopen(
                connection, user_id, "chat", body=self.body, wait=True, on_wait=self._waiting
            )
            self.endpoint = self.limits.ticket.endpoint
        if self.body.get("stream"):
            try:
                await self._stream()
            except UpstreamError as error:
                # Some providers refuse stream_options; ask once more without it and let the connection forget it.
                if not (rejects_stream_options(error) and "stream_options" in self.body and not self.answer.chunks):
                    raise
                self.body = {k: v for k, v in self.body.items() if k != "stream_options"}
                if self.limits.connection_id:
                    await Connection.objects.filter(pk=self.limits.connection_id).aupdate(include_usage=False)
                await self._stream()
        else:
            self.written.set()  # no hook tells when this request is written: the rows need not wait for its answer
            try:
                result = await asyncio.wait_for(
                    client.chat(self.endpoint, self.body, self.headers), self.limits.first_token
                )
            except TimeoutError:
                raise self.limits.no_answer() from None
            self._request_written()
            self.answer.trace_id = result.trace_id
            self.answer.apply_response(result.data if isinstance(result.data, dict) else {})

    async def _stream(self) -> None:
        # The first-token timeout covers connecting and the response headers too; paced() lifts it once the
        # answer has started and watches the silences between chunks instead.
        answer = self.answer
        try:
            async with asyncio.timeout(self.limits.first_token) as first:
                async with client.chat_stream(
                    self.endpoint, self.body, self.headers, sent=self._request_written
                ) as stream:
                    answer.trace_id = stream.trace_id
                    apply = answer.apply
                    async for batch in self.limits.paced(stream, answer, first):
                        if self.stop_requested:
                            raise asyncio.CancelledError
                        for chunk in batch:
                            apply(chunk)
        except TimeoutError:
            raise self.limits.no_answer() from None

    async def _waiting(self, in_use: int, limit: int) -> None:
        """Tell the tabs the answer waits for a free slot of its connection (rather than failing)."""
        if self._said_waiting == (in_use, limit):
            return
        self._said_waiting = (in_use, limit)
        await asyncio.shield(self._bound)
        await self.live.await_announcement()
        text = f"Waiting for a free slot ({in_use} of {limit} in use)"  # the badge animates its own dots
        try:
            event = {"type": "chat.waiting", "message_id": self.answer.message_id, "text": text}
            await fanout.publish(get_channel_layer(), conversation_group(self.answer.conversation_id), event)
        except Exception as exc:
            self.live.lost_live(exc)

    # -- the whole life of a generation

    async def run(self) -> None:
        # The upstream call first; the rest needs the message, which the caller is saving meanwhile.
        self.work = asyncio.create_task(self._call())
        layer = get_channel_layer()
        publisher = asyncio.create_task(self.live.run(layer)) if self.live.tab is not None else None
        try:
            await self._bound
        except asyncio.CancelledError:
            for task in (self.work, publisher):
                if task is not None:
                    task.cancel()  # the publisher only hands to the tab before the announcement: nothing is cut
                    with suppress(BaseException):
                        await task
            await asyncio.shield(self._release_ticket())  # dropped before its row existed: nothing is filed
            raise
        status, error = Message.COMPLETE, None
        channel, listener, helpers = None, None, []
        try:
            helpers.append(asyncio.create_task(persistence.flush_every_second(self.answer, self.body)))
            if publisher is not None:
                helpers.append(publisher)
            channel, listener = await control.join(layer, self.live, self.stop)
            if publisher is None:
                helpers.append(asyncio.create_task(self.live.run(layer)))
            await self.work
        except asyncio.CancelledError:
            # Cancelled from outside (the process is shutting down) rather than by Stop: keep it as interrupted.
            status = Message.INTERRUPTED if asyncio.current_task().cancelling() else Message.STOPPED
        except UpstreamError as exc:
            status, error = Message.ERROR, exc.as_dict()
            if not error.get("trace_id"):
                error["trace_id"] = self.answer.trace_id
        except Exception as exc:
            log.exception("Generation of message %s failed", self.answer.message_id)
            status, error = Message.ERROR, internal_error(exc, self.answer.trace_id)
        finally:
            # Every path releases what the generation took: the upstream response, the helpers, the channel.
            # Shielded: a second cancel (shutdown) must not cut the release and the final save short.
            await asyncio.shield(self._close(layer, channel, listener, helpers, status, error))

    async def _close(self, layer, channel, listener, helpers, status: str, error: dict | None) -> None:
        answer = self.answer
        try:
            await self._release(layer, channel, listener, helpers)
            await self._end(layer, channel, status, error)
        finally:
            detached.untrack(KIND, answer.message_id, self)
            metrics.generation_ended(
                KIND,
                key=answer.message_id,
                status=status,
                trace_id=answer.trace_id,
                model=str(self.body.get("model", "")),
                seconds=time.monotonic() - answer.started,
                first_token_ms=round((answer.first_token - answer.started) * 1000, 1) if answer.first_token else None,
                finish_reason=answer.finish_reason,
            )
            await self._release_ticket()  # when _end could not settle it

    async def _release_ticket(self) -> None:
        if self.limits.ticket is not None:
            try:
                await self.limits.ticket.arelease()
            except Exception:
                log.exception("Could not release the lease of message %s", self.answer.message_id)

    async def _release(self, layer, channel: str | None, listener: asyncio.Task | None, helpers: list) -> None:
        if not self.work.done():
            self.work.cancel()
        with suppress(BaseException):
            await self.work
        if helpers:
            helpers[0].cancel()  # the flusher; the publisher ends by itself once closed
        self.live.close()
        if listener is not None:
            await control.close_listener(layer, channel, listener)
        for helper in helpers:
            with suppress(BaseException):
                await helper

    async def _finish(self, status: str, error: dict | None) -> dict | None:
        return await persistence.finish(
            self.answer, self.body, status, error, replaces=self.replaces, ticket=self.limits.ticket
        )

    def _page_finishes(self, status: str) -> bool:
        """Whether the tabs that watched the answer can finish its article themselves (final.js): a complete
        answer of plain text whose every delta was published. Tool calls, other choices, a retry (its place among
        its siblings changes) and a compare column take the server's final render."""
        answer = self.answer
        return status == Message.COMPLETE and not (
            answer.tool_calls or answer.extra or self.replaces or self.whole_final or self.live.lost
        )

    async def _end(self, layer, channel: str | None, status: str, error: dict | None) -> None:
        """Make the row final, then tell the viewers: a tab that hears `done` reads a finished message. The last
        words go out first: they must not wait for the final save. When the page can finish the article itself,
        `done` carries what it needs instead of the article: the server's render of the last words (the live
        tail, as a delta's blocks) and the footer's rows, so the end costs no render of the whole answer here and
        no swap there; reloads and late tabs render the saved row."""
        answer, live = self.answer, self.live
        await live.await_announcement()
        try:
            await live.publish(layer)
        except Exception as exc:
            live.lost_live(exc)
        try:
            fields = await self._finish(status, error)
        except Exception:
            # Left streaming, no longer stamped: the heartbeat sweep ends it as interrupted with what was flushed.
            log.exception("Could not save the end of message %s", answer.message_id)
            return
        await persistence.record_usage(answer, self.body, self.limits.ticket, status)
        if fields is None:
            html = None  # deleted mid-stream
        elif self._page_finishes(status):
            html = ""
        else:
            html = await sync_to_async(final_html)(answer.message_id)  # None: deleted mid-stream
        await live.await_announcement()
        try:
            # Live viewers get every delta before the end.
            await live.publish(layer)
            if channel is not None:
                await layer.group_discard(generation_group(answer.message_id), channel)
            if html is None:
                return
            event = {
                "type": "chat.error" if status == Message.ERROR else "chat.done",
                "message_id": answer.message_id,
                "seq": answer.seq,
                "status": status,
            }
            if html:
                event["html"] = html
            else:
                event["last"], event["meta"] = live.finish(), finished_meta(answer.message_id, fields, self.body)
            if self.replaces and status == Message.COMPLETE:
                event["replaced"] = self.replaces
            await live.settled()  # a delta whose frame failed is known before the notice is decided
            if live.lost:
                event["notice"] = LIVE_LOST_NOTICE
            await fanout.publish(layer, conversation_group(answer.conversation_id), event)
        except Exception as exc:
            live.lost_live(exc)
