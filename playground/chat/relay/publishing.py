"""What a running answer shows live (`Live`): its deltas coalesced by frame and published to the conversation's
group (to the asking tab alone until the turn is announced), its snapshot for a tab that joins late, and the loss
of the live view when the channel layer fails. A part of Generation (generation.py), given the answer it shows."""

import asyncio
import logging
from contextlib import suppress

from playground.chat.relay import fanout
from playground.chat.relay.answer import Answer, choice_texts
from playground.lib.markdown.rendering import BlockRenderer

log = logging.getLogger(__name__)

FRAME = 1 / 60  # deltas within one frame (60 Hz) are merged into one websocket message
ANNOUNCE_WAIT = 2.0  # longest a generation holds its deltas for the announcement of its placeholder


def conversation_group(pk: int) -> str:
    return f"conversation.{pk}"


def wake_up(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


class Live:
    """What the websockets have been sent of `answer` so far, and the publisher that sends them the rest
    (`answer.unsent`). `tab` is the socket that asked: it gets the deltas alone until the turn is announced."""

    def __init__(self, answer: Answer, tab: fanout.Tab | None = None):
        self.answer = answer
        self.tab = tab
        # Set once the placeholder was announced to the tabs (start_turn): no delta or end may overtake it.
        self.announced = asyncio.Event()
        self.catch_up = False  # announced after deltas went to the tab alone: the other tabs get them in one
        self.closing = False  # ending: nothing more is published but its final event
        self.nap: asyncio.Future | None = None  # the publisher's pause between two frames, cut short at the end
        self.lost = False  # a publish failed: some tab may have missed deltas
        self.sending: asyncio.Future | None = None  # the last delta's ticket in the outbox (fanout.publish)
        self.seq = 0
        self.renderer = BlockRenderer()
        self.blocks: list[str] = []
        self.tail = ""
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.extra: dict[int, list[str]] = {}

    def announce(self) -> None:
        """The placeholder went to every tab (start_turn): the deltas go to them all from now on, the first of
        them carrying, for the other tabs, what the asking tab got alone."""
        self.catch_up = self.tab is not None and self.seq > 0
        if self.catch_up:
            self.tab.bound(self.answer.message_id, self.seq)
        self.announced.set()
        if self.catch_up:
            self.answer.unsent.wake.set()

    def close(self) -> None:
        """The answer ends: the publisher sends what is left and stops, without waiting out its frame."""
        self.closing = True
        self.answer.unsent.wake.set()
        if self.nap is not None:
            wake_up(self.nap)

    def _caught_up(self) -> dict:
        """Everything published so far as one delta (for the tabs that heard the start after the asking one got
        the first deltas alone); the asking tab, which has them, is skipped."""
        event = {
            "type": "chat.delta",
            "message_id": self.answer.message_id,
            "seq": self.seq,
            "after": 0,
            "blocks": list(self.blocks),
            "tail": self.tail,
            "reasoning": "".join(self.reasoning),
            "text": "".join(self.content),
        }
        if self.extra:
            event["choices"] = {str(index): "".join(parts) for index, parts in self.extra.items()}
        return event

    async def publish(self, layer) -> None:
        answer, unsent = self.answer, self.answer.unsent
        if self.catch_up and self.announced.is_set():
            self.catch_up = False
            group = conversation_group(answer.conversation_id)
            await self._publish(layer, group, self._caught_up(), skip=self.tab.consumer)
        if not unsent:
            return
        # Everything up to the await happens at once, so a snapshot always matches what was published.
        text, reasoning, extra = unsent.take()
        for index, part in extra.items():
            self.extra.setdefault(int(index), []).append(part)
        if text:
            blocks, self.tail = self.renderer.feed(text)
            self.blocks.extend(blocks)
        else:
            blocks = []
        self.content.append(text)
        self.reasoning.append(reasoning)
        after, self.seq = self.seq, answer.seq
        event = {
            "type": "chat.delta",
            "message_id": answer.message_id,
            "seq": answer.seq,
            "after": after,  # the seq this delta continues: a socket that has less missed one (replay.py)
            "blocks": blocks,
            "tail": self.tail,
            "reasoning": reasoning,
            "text": text,
        }
        if extra:
            event["choices"] = extra  # choice index -> text appended (n > 1)
        if unsent.timing:
            event["t"], unsent.since = unsent.since, None
        if self.tab is not None and not self.announced.is_set():
            self.tab.hand(event)  # message_id None until bound: the tab knows the answer by its ask's id
        else:
            await self._publish(layer, conversation_group(answer.conversation_id), event)

    async def _publish(self, layer, group: str, event: dict, skip=None) -> None:
        ticket = await fanout.publish(layer, group, event, skip=skip, lost=self.lost_live)
        if ticket is not None:
            self.sending = ticket

    async def settled(self) -> None:
        """Wait until the deltas published so far left the outbox (a failure among them sets `lost` first)."""
        if self.sending is not None:
            with suppress(Exception):
                await asyncio.shield(self.sending)

    def finish(self) -> list[str]:
        """The end of the answer: the server's render of its last words (the live tail, which the tabs show as
        their own render of it), as blocks, for the `done` event. Sanitized as every delta's blocks are."""
        html = self.renderer.finish()
        self.tail = ""
        if html:
            self.blocks.append(html)
        return [html] if html else []

    async def await_announcement(self) -> None:
        # Bounded: a generation started without start_turn (or whose announcement failed) still publishes.
        with suppress(TimeoutError):
            await asyncio.wait_for(self.announced.wait(), ANNOUNCE_WAIT)

    async def run(self, layer) -> None:
        # The first delta after a pause goes out at once; the ones that follow within a frame are merged.
        # It is never cancelled mid-send (a delta would be lost): the generation closes it and waits for it to end.
        # With a tab it starts with the upstream call (its deltas go to the tab until the announcement).
        wake = self.answer.unsent.wake
        if self.tab is None:
            await self.await_announcement()
        while not self.closing:
            await wake.wait()
            wake.clear()
            try:
                await self.publish(layer)
            except Exception as exc:
                self.lost_live(exc)
            if not self.closing:
                await self._pause()

    async def _pause(self) -> None:
        """One frame, or less when the answer ends meanwhile (its last words then go out at once, at the end)."""
        loop = asyncio.get_running_loop()
        self.nap = nap = loop.create_future()
        timer = loop.call_later(FRAME, wake_up, nap)
        try:
            await nap
        finally:
            timer.cancel()
            self.nap = None

    def snapshot(self) -> dict:
        return {
            "type": "chat.snapshot",
            "message_id": self.answer.message_id,
            "seq": self.seq,
            "blocks": list(self.blocks),
            "tail": self.tail,
            "reasoning": "".join(self.reasoning),
            "content": "".join(self.content),
            "choices": choice_texts(self.extra),
        }

    def followed_remotely(self) -> None:
        fanout.remote_follower(conversation_group(self.answer.conversation_id))

    def lost_live(self, exc: BaseException) -> None:
        """A channel-layer failure costs the live view, never the answer: it is still saved whole."""
        if not self.lost:
            log.warning("Generation of message %s continues without live deltas: %r", self.answer.message_id, exc)
        self.lost = True
