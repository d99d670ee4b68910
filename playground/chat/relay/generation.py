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
import time
from contextlib import suppress

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from playground.chat.models import Message
from playground.chat.relay import fanout
from playground.chat.relay.chunks import merge_tool_call, whole_answer
from playground.chat.relay.control import ControlChannel, generation_group
from playground.chat.relay.display import final_html
from playground.chat.relay.limits import Limits, internal_error, rejects_stream_options
from playground.chat.relay.persistence import AnswerRows, record_usage
from playground.chat.relay.publishing import LiveDeltas, conversation_group, wake_up
from playground.connections import gate
from playground.connections.models import Connection
from playground.lib import detached, metrics
from playground.lib.markdown.rendering import BlockRenderer
from playground.upstream import client
from playground.upstream.client import Endpoint
from playground.upstream.errors import UpstreamError

log = logging.getLogger(__name__)

KIND = "chat"  # generations in the background-work registry (playground/lib/detached.py), keyed by message pk
LIVE_LOST_NOTICE = "This tab may have missed live deltas; the saved answer is complete."


def running(message_id: int) -> "Generation | None":
    """The generation of this message if it runs in this process."""
    return detached.get(KIND, message_id)


class Generation(AnswerRows, ControlChannel, LiveDeltas):
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
        # Known once the assistant row exists (bind); the upstream call may start before.
        self.message_id: int | None = None
        self.conversation_id: int | None = None
        self.loop = loop
        self._bound: asyncio.Future | None = None
        self.endpoint = endpoint
        self.body = body
        self.headers = headers or {}
        self.task: asyncio.Task | None = None
        self.requested = asyncio.Event()  # the request is written: the provider is working on it
        self.work: asyncio.Task | None = None
        self.stop_requested = False
        self.replaces: int | None = None  # a retried answer, deleted once this one is complete
        self.live_lost = False  # a publish failed: some tab may have missed deltas
        self.limits = limits or Limits()
        self.tab = tab  # the socket that asked: it gets the deltas before the announcement

        self.seq = 0
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.extra: dict[int, list[str]] = {}
        self.tool_calls: dict[int, dict] = {}
        self.usage: dict | None = None
        self.finish_reason = ""
        self.trace_id = ""
        self.started = time.monotonic()
        self.first_token: float | None = None
        self.chunks = 0

        # What was received but not yet published, and what the websockets have been sent so far.
        self._pending_text: list[str] = []
        self._pending_reasoning: list[str] = []
        self._pending_extra: dict[int, list[str]] = {}
        self._wake = asyncio.Event()
        self._nap: asyncio.Future | None = None  # the publisher's pause between two frames, cut short at the end
        self._closing = False
        # Set once the placeholder was announced to the tabs (start_turn): no delta or end may overtake it.
        self.announced = asyncio.Event()
        self._catch_up = False  # announced after deltas went to the tab alone: the other tabs get them in one
        self.published_seq = 0
        self.renderer = BlockRenderer()
        self.blocks: list[str] = []
        self.tail = ""
        self.published_content: list[str] = []
        self.published_extra: dict[int, list[str]] = {}
        self.published_reasoning: list[str] = []
        self.publishes = 0
        self._timing = settings.DEBUG_RELAY_TIMING
        self._pending_since: float | None = None

    # -- life cycle (begin, bind and abort run on the event loop)

    def begin(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._bound = self.loop.create_future()
        self.task = detached.spawn(self.run(), name="generation")

    def bind(self, message_id: int, conversation_id: int) -> None:
        self.message_id, self.conversation_id = message_id, conversation_id
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
        """The placeholder went to every tab (start_turn): the deltas go to them all from now on, the first of
        them carrying, for the other tabs, what the asking tab got alone."""
        self._catch_up = self.tab is not None and self.published_seq > 0
        if self._catch_up:
            self.tab.bound(self.message_id, self.published_seq)
        self.announced.set()
        if self._catch_up:
            self._wake.set()

    # -- control

    def stop(self) -> None:
        self.stop_requested = True
        if self.work is not None and not self.work.done():
            self.work.cancel()

    cancel = stop  # detached.cancel(KIND, pk)

    @property
    def closing(self) -> bool:
        """Ending: nothing more is published but its final event."""
        return self._closing

    # -- the upstream call

    async def _call(self) -> None:
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
                if not (rejects_stream_options(error) and "stream_options" in self.body and not self.chunks):
                    raise
                self.body = {k: v for k, v in self.body.items() if k != "stream_options"}
                if self.limits.connection_id:
                    await Connection.objects.filter(pk=self.limits.connection_id).aupdate(include_usage=False)
                await self._stream()
        else:
            try:
                result = await asyncio.wait_for(
                    client.chat(self.endpoint, self.body, self.headers), self.limits.first_token
                )
            except TimeoutError:
                raise self.limits.no_answer() from None
            self.trace_id = result.trace_id
            self._apply_response(result.data if isinstance(result.data, dict) else {})

    async def _stream(self) -> None:
        # The first-token timeout covers connecting and the response headers too; paced() lifts it once the
        # answer has started and watches the silences between chunks instead.
        try:
            async with asyncio.timeout(self.limits.first_token) as first:
                async with client.chat_stream(
                    self.endpoint, self.body, self.headers, sent=self.requested.set
                ) as stream:
                    self.trace_id = stream.trace_id
                    apply = self._apply
                    async for batch in self.limits.paced(stream, self, first):
                        if self.stop_requested:
                            raise asyncio.CancelledError
                        for chunk in batch:
                            apply(chunk)
        except TimeoutError:
            raise self.limits.no_answer() from None

    def _add(self, text: str, reasoning: str) -> None:
        if self.first_token is None:
            self.first_token = time.monotonic()
        if self._timing and self._pending_since is None:
            self._pending_since = time.time()
        self.seq += 1
        if text:
            self.content.append(text)
            self._pending_text.append(text)
        if reasoning:
            self.reasoning.append(reasoning)
            self._pending_reasoning.append(reasoning)
        self._wake.set()

    def _apply(self, chunk: dict) -> None:
        self.chunks += 1
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            index = choice.get("index") or 0
            delta = choice.get("delta") or {}
            text = delta.get("content") or ""
            reasoning = delta.get("reasoning_content") or ""
            if index == 0:
                if choice.get("finish_reason"):
                    self.finish_reason = choice["finish_reason"]
                for call in delta.get("tool_calls") or []:
                    self._merge_tool_call(call)
                if text or reasoning:
                    self._add(text, reasoning)
            elif text:
                # The other choices (n > 1) stream too, numbered in the same sequence as the first.
                self.seq += 1
                self.extra.setdefault(index, []).append(text)
                self._pending_extra.setdefault(index, []).append(text)
                self._wake.set()

    def _merge_tool_call(self, call: dict) -> None:
        if self.first_token is None:
            self.first_token = time.monotonic()
        merge_tool_call(self.tool_calls, call)

    def _apply_response(self, data: dict) -> None:
        answer = whole_answer(data)
        self.usage, self.finish_reason, self.extra = answer.usage, answer.finish_reason, answer.extra
        self.tool_calls.update(answer.tool_calls)
        if answer.content or answer.reasoning:
            self._add(answer.content, answer.reasoning)

    async def _waiting(self, in_use: int, limit: int) -> None:
        """Tell the tabs the answer waits for a free slot of its connection (rather than failing)."""
        if getattr(self, "_said_waiting", None) == (in_use, limit):
            return
        self._said_waiting = (in_use, limit)
        await asyncio.shield(self._bound)
        await self._await_announcement()
        text = f"Waiting for a free slot ({in_use} of {limit} in use)"  # the badge animates its own dots
        try:
            event = {"type": "chat.waiting", "message_id": self.message_id, "text": text}
            await fanout.publish(get_channel_layer(), conversation_group(self.conversation_id), event)
        except Exception as exc:
            self.lost_live(exc)

    # -- the whole life of a generation

    async def run(self) -> None:
        # The upstream call first; the rest needs the message, which the caller is saving meanwhile.
        self.work = asyncio.create_task(self._call())
        layer = get_channel_layer()
        publisher = asyncio.create_task(self._publish_loop(layer)) if self.tab is not None else None
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
            helpers.append(asyncio.create_task(self._flush_loop()))
            if publisher is not None:
                helpers.append(publisher)
            channel, listener = await self._join(layer)
            if publisher is None:
                helpers.append(asyncio.create_task(self._publish_loop(layer)))
            await self.work
        except asyncio.CancelledError:
            # Cancelled from outside (the process is shutting down) rather than by Stop: keep it as interrupted.
            status = Message.INTERRUPTED if asyncio.current_task().cancelling() else Message.STOPPED
        except UpstreamError as exc:
            status, error = Message.ERROR, exc.as_dict()
            if not error.get("trace_id"):
                error["trace_id"] = self.trace_id
        except Exception as exc:
            log.exception("Generation of message %s failed", self.message_id)
            status, error = Message.ERROR, internal_error(exc, self.trace_id)
        finally:
            # Every path releases what the generation took: the upstream response, the helpers, the channel.
            # Shielded: a second cancel (shutdown) must not cut the release and the final save short.
            await asyncio.shield(self._close(layer, channel, listener, helpers, status, error))

    async def _close(self, layer, channel, listener, helpers, status: str, error: dict | None) -> None:
        try:
            await self._release(layer, channel, listener, helpers)
            await self._end(layer, channel, status, error)
        finally:
            detached.untrack(KIND, self.message_id, self)
            metrics.generation_ended(
                KIND,
                key=self.message_id,
                status=status,
                trace_id=self.trace_id,
                model=str(self.body.get("model", "")),
                seconds=time.monotonic() - self.started,
                first_token_ms=round((self.first_token - self.started) * 1000, 1) if self.first_token else None,
                finish_reason=self.finish_reason,
            )
            await self._release_ticket()  # when _end could not settle it

    async def _release_ticket(self) -> None:
        if self.limits.ticket is not None:
            try:
                await self.limits.ticket.arelease()
            except Exception:
                log.exception("Could not release the lease of message %s", self.message_id)

    async def _release(self, layer, channel: str | None, listener: asyncio.Task | None, helpers: list) -> None:
        if not self.work.done():
            self.work.cancel()
        with suppress(BaseException):
            await self.work
        if helpers:
            helpers[0].cancel()  # the flusher; the publisher ends by itself once _closing is set
        self._closing = True
        self._wake.set()
        if self._nap is not None:
            wake_up(self._nap)
        if listener is not None:
            await self._close_listener(layer, channel, listener)
        for helper in helpers:
            with suppress(BaseException):
                await helper

    async def _end(self, layer, channel: str | None, status: str, error: dict | None) -> None:
        """Make the row final, then tell the viewers: a tab that hears `done` reads a finished message. The last
        words go out first: they must not wait for the final save and render."""
        await self._await_announcement()
        try:
            await self._publish(layer)
        except Exception as exc:
            self.lost_live(exc)
        try:
            await self._finish(status, error)
        except Exception:
            # Left streaming, no longer stamped: the heartbeat sweep ends it as interrupted with what was flushed.
            log.exception("Could not save the end of message %s", self.message_id)
            return
        await record_usage(self, status)
        html = await sync_to_async(final_html)(self.message_id)  # None: deleted mid-stream
        await self._await_announcement()
        try:
            # Live viewers get every delta before the final render.
            await self._publish(layer)
            if channel is not None:
                await layer.group_discard(generation_group(self.message_id), channel)
            if html is None:
                return
            event = {
                "type": "chat.error" if status == Message.ERROR else "chat.done",
                "message_id": self.message_id,
                "seq": self.seq,
                "status": status,
                "html": html,
            }
            if self.replaces and status == Message.COMPLETE:
                event["replaced"] = self.replaces
            if self.live_lost:
                event["notice"] = LIVE_LOST_NOTICE
            await fanout.publish(layer, conversation_group(self.conversation_id), event)
        except Exception as exc:
            self.lost_live(exc)
