"""What a running answer shows live: its deltas coalesced by frame and published to the conversation's group (to
the asking tab alone until the turn is announced), its snapshot for a tab that joins late, and the loss of the
live view when the channel layer fails. A mixin of Generation (generation.py), as AnswerRows and ControlChannel."""

import asyncio
import logging
from contextlib import suppress

from playground.chat.relay import fanout

log = logging.getLogger(__name__)

FRAME = 1 / 60  # deltas within one frame (60 Hz) are merged into one websocket message
ANNOUNCE_WAIT = 2.0  # longest a generation holds its deltas for the announcement of its placeholder


def conversation_group(pk: int) -> str:
    return f"conversation.{pk}"


def wake_up(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


class LiveDeltas:
    def _caught_up(self) -> dict:
        """Everything published so far as one delta (for the tabs that heard the start after the asking one got
        the first deltas alone); the asking tab, which has them, is skipped."""
        event = {
            "type": "chat.delta",
            "message_id": self.message_id,
            "seq": self.published_seq,
            "after": 0,
            "blocks": list(self.blocks),
            "tail": self.tail,
            "reasoning": "".join(self.published_reasoning),
            "text": "".join(self.published_content),
        }
        if self.published_extra:
            event["choices"] = {str(index): "".join(parts) for index, parts in self.published_extra.items()}
        return event

    async def _publish(self, layer) -> None:
        if self._catch_up and self.announced.is_set():
            self._catch_up = False
            group = conversation_group(self.conversation_id)
            await fanout.publish(layer, group, self._caught_up(), skip=self.tab.consumer)
        if not (self._pending_text or self._pending_reasoning or self._pending_extra):
            return
        # Everything up to the await happens at once, so a snapshot always matches what was published.
        text, self._pending_text = "".join(self._pending_text), []
        reasoning, self._pending_reasoning = "".join(self._pending_reasoning), []
        # String keys: the Redis layer's msgpack refuses integer map keys.
        extra, self._pending_extra = {str(i): "".join(parts) for i, parts in self._pending_extra.items()}, {}
        for index, part in extra.items():
            self.published_extra.setdefault(int(index), []).append(part)
        if text:
            blocks, self.tail = self.renderer.feed(text)
            self.blocks.extend(blocks)
        else:
            blocks = []
        self.published_content.append(text)
        self.published_reasoning.append(reasoning)
        after, self.published_seq = self.published_seq, self.seq
        self.publishes += 1
        event = {
            "type": "chat.delta",
            "message_id": self.message_id,
            "seq": self.seq,
            "after": after,  # the seq this delta continues: a socket that has less missed one (replay.py)
            "blocks": blocks,
            "tail": self.tail,
            "reasoning": reasoning,
            "text": text,
        }
        if extra:
            event["choices"] = extra  # choice index -> text appended (n > 1)
        if self._timing:
            event["t"], self._pending_since = self._pending_since, None
        if self.tab is not None and not self.announced.is_set():
            self.tab.hand(event)  # message_id None until bound: the tab knows the answer by its ask's id
        else:
            await fanout.publish(layer, conversation_group(self.conversation_id), event)

    async def _await_announcement(self) -> None:
        # Bounded: a generation started without start_turn (or whose announcement failed) still publishes.
        with suppress(TimeoutError):
            await asyncio.wait_for(self.announced.wait(), ANNOUNCE_WAIT)

    async def _publish_loop(self, layer) -> None:
        # The first delta after a pause goes out at once; the ones that follow within a frame are merged.
        # It is never cancelled mid-send (a delta would be lost): run() sets _closing and waits for it to end.
        # With a tab it starts with the upstream call (its deltas go to the tab until the announcement).
        if self.tab is None:
            await self._await_announcement()
        while not self._closing:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._publish(layer)
            except Exception as exc:
                self.lost_live(exc)
            if not self._closing:
                await self._pause()

    async def _pause(self) -> None:
        """One frame, or less when the answer ends meanwhile (its last words then go out at once, in _end)."""
        loop = asyncio.get_running_loop()
        self._nap = nap = loop.create_future()
        timer = loop.call_later(FRAME, wake_up, nap)
        try:
            await nap
        finally:
            timer.cancel()
            self._nap = None

    def snapshot(self) -> dict:
        return {
            "type": "chat.snapshot",
            "message_id": self.message_id,
            "seq": self.published_seq,
            "blocks": list(self.blocks),
            "tail": self.tail,
            "reasoning": "".join(self.published_reasoning),
            "content": "".join(self.published_content),
            "choices": self._choices(self.published_extra),
        }

    def _choices(self, extra: dict[int, list[str]] | None = None) -> list[str]:
        """The texts of the choices after the first (n > 1), in order of their index."""
        extra = self.extra if extra is None else extra
        return ["".join(extra.get(index, [])) for index in range(1, max(extra, default=0) + 1)]

    def followed_remotely(self) -> None:
        fanout.remote_follower(conversation_group(self.conversation_id))

    def lost_live(self, exc: BaseException) -> None:
        """A channel-layer failure costs the live view, never the answer: it is still saved whole."""
        if not self.live_lost:
            log.warning("Generation of message %s continues without live deltas: %r", self.message_id, exc)
        self.live_lost = True
