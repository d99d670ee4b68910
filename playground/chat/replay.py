"""Snapshot + sequence replay of running answers for one websocket: the owner's tabs and share viewers alike.

A socket that subscribes to a streaming message asks its generation (on whatever process it runs) for a snapshot;
deltas that arrive meanwhile are held and delivered after it, each exactly once by its sequence number. When no
generation answers in time, the database has what was flushed. Each delta names the seq it continues (`after`): a
socket that sees a gap asks for a snapshot again, so a delta the channel layer dropped costs a snapshot, never a word.
"""

import asyncio

from playground.chat.models import Message
from playground.chat.relay import fanout
from playground.chat.relay.control import generation_group
from playground.chat.relay.display import SNAPSHOT_TIMEOUT, snapshot_from_database
from playground.chat.relay.generation import running


class Replay:
    """A mixin of AsyncJsonWebsocketConsumer. Subclasses give `load_message`, `send_stored` and may `recover`."""

    # Deltas of a message this socket never subscribed to: taken when True; chat tabs and share viewers set it
    # False and mark a turn known once its start reached them (chat_start), so none starts mid-answer.
    follows_unknown = True

    def start_replay(self) -> None:
        self.waiting: dict[int, list[dict]] = {}  # live deltas held until the message's snapshot arrives
        self.fallbacks: dict[int, asyncio.Task] = {}
        self.last_seq: dict[int, int] = {}

    def stop_replay(self) -> None:
        for task in self.fallbacks.values():
            task.cancel()

    async def load_message(self, message_id: int) -> Message | None:
        raise NotImplementedError

    async def send_stored(self, message: Message) -> None:
        """Send a finished message as the database holds it."""
        raise NotImplementedError

    async def recover(self, message: Message) -> Message | None:
        """A message still streaming whose generation did not answer; the owner's socket ends it."""
        return message

    # How often a socket asks again for a message still streaming whose generation did not answer (and whose
    # `recover` did not end it): 0 never. A generation may be starting; a dead one's row ends on a later try.
    probes = 0

    async def subscribe(self, message_id: int, after: int, probe: int = 0) -> None:
        generation = running(message_id) if fanout.ENABLED else None
        if generation is not None and generation.conversation_id == self.conversation_id and not generation.closing:
            # Same process, still running (its end will reach this socket too): the snapshot is taken here, with
            # no query, and the deltas that follow are handed over in memory.
            self.waiting[message_id] = []
            self.last_seq[message_id] = after
            await self.chat_snapshot(generation.snapshot())
            return
        message = await self.load_message(message_id)
        if message is None:
            return
        if message.status != Message.STREAMING:
            await self.send_stored(message)
            return
        earlier = self.fallbacks.pop(message_id, None)
        if earlier is not None:
            earlier.cancel()
        self.waiting[message_id] = []
        self.last_seq[message_id] = after
        await self.channel_layer.group_send(
            generation_group(message_id),
            {"type": "generation.snapshot", "message_id": message_id, "reply_to": self.channel_name},
        )
        self.fallbacks[message_id] = asyncio.create_task(self._fallback(message_id, probe))

    async def _fallback(self, message_id: int, probe: int = 0) -> None:
        """No generator answered in time: it finished or its process died. The database has the rest."""
        await asyncio.sleep(SNAPSHOT_TIMEOUT)
        self.fallbacks.pop(message_id, None)
        if message_id not in self.waiting:
            return
        message = await self.load_message(message_id)
        if message is not None and message.status == Message.STREAMING:
            message = await self.recover(message)
        if message_id not in self.waiting:
            return  # the generator answered meanwhile
        if message is None:
            self.waiting.pop(message_id, None)
        elif message.status == Message.STREAMING:
            await self._deliver_snapshot(await snapshot_from_database(message))
            if probe < self.probes:
                self.fallbacks[message_id] = asyncio.create_task(self._probe_again(message_id, probe + 1))
        else:
            self.waiting.pop(message_id, None)
            await self.send_stored(message)

    async def _probe_again(self, message_id: int, probe: int) -> None:
        await asyncio.sleep(SNAPSHOT_TIMEOUT)
        self.fallbacks.pop(message_id, None)
        await self.subscribe(message_id, self.last_seq.get(message_id, 0), probe)

    async def _deliver_snapshot(self, snapshot: dict) -> None:
        message_id = snapshot["message_id"]
        held = self.waiting.pop(message_id, [])
        await self.send_json({**snapshot, "type": "snapshot"})
        self.last_seq[message_id] = snapshot["seq"]
        for delta in held:
            await self.chat_delta(delta)

    def end_replay(self, message_id: int) -> None:
        self.waiting.pop(message_id, None)
        fallback = self.fallbacks.pop(message_id, None)
        if fallback is not None:
            fallback.cancel()

    # -- events from the channel layer

    async def chat_delta(self, event):
        message_id = event["message_id"]
        if message_id in self.waiting:
            self.waiting[message_id].append(event)
            return
        if message_id not in self.last_seq and not self.follows_unknown:
            return
        last = self.last_seq.get(message_id, 0)
        if event["seq"] <= last:
            return
        if event.get("after", last) > last:
            # A delta between the last one sent and this one never came (the channel layer can drop a message):
            # the snapshot brings everything up to now, and this delta waits for it with those that follow.
            await self.subscribe(message_id, last)
            if message_id in self.waiting:
                self.waiting[message_id].append(event)
            return
        self.last_seq[message_id] = event["seq"]
        await self.send_json({**event, "type": "delta"})

    async def chat_snapshot(self, event):
        if event["message_id"] not in self.waiting:
            return
        fallback = self.fallbacks.pop(event["message_id"], None)
        if fallback is not None:
            fallback.cancel()
        await self._deliver_snapshot(event)
