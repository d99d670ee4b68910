"""The chat websocket: transport glue between a browser tab and the conversation's generations (see services).

Frames from the tab, actions (`{"action": "send", "id": ...}`) and signals (`ping`, `subscribe`, `stop`), are
handed as they are to actions.py, which dispatches each to its handler."""

import asyncio

from channels.db import database_sync_to_async

from playground.chat import actions
from playground.chat.models import Message
from playground.chat.relay import fanout
from playground.chat.relay.display import render_message
from playground.chat.relay.fanout import LocalFollower
from playground.chat.relay.publishing import conversation_group
from playground.chat.relay.recovery import interrupt_orphan, orphan_wait
from playground.chat.replay import Replay
from playground.chat.send_cache import SendCache
from playground.lib.frames import FrameConsumer
from playground.lib.sockets import AccountSockets


class ChatConsumer(AccountSockets, LocalFollower, Replay, FrameConsumer):
    group = None
    follows_unknown = False  # deltas count once the turn's start was heard here, or once subscribed

    async def connect(self):
        self.conversation_id = self.scope["url_route"]["kwargs"]["pk"]
        self.start_replay()
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.accept()
            await self.close(code=4403)
            return
        # What this socket's sends reuse (send_cache.py), read now: the ownership check and the first send's reads.
        self.sends = SendCache(user, self.conversation_id)
        if await database_sync_to_async(self.sends.conversation)() is None:
            await self.accept()
            await self.close(code=4404)
            return
        self.group = conversation_group(self.conversation_id)
        # Follow before accepting (this process is in the group once it returns): once the client sees the
        # socket open, no delta can pass it by.
        await fanout.follow(self.group, self)
        await self.accept()

    async def disconnect(self, code):
        self.stop_replay()
        if self.group:
            await self.stop_following(self.group)

    @classmethod
    def frame_kinds(cls) -> list[str]:
        return actions.kinds()

    async def receive_json(self, content, **kwargs):
        if self.group:
            await actions.dispatch(self.scope["user"], self.conversation_id, content, self.send_json, self)

    probes = 5  # asked again while its row is still being stamped (a generation alive but out of reach)

    async def recover(self, message: Message) -> Message | None:
        # No generation answered on any process. A live one stamps its row every second: unless the stamp moves
        # within ORPHAN_AFTER of the last one, the generation is gone and the answer ends now.
        wait = orphan_wait(message)
        if wait:
            await asyncio.sleep(wait)
        if message.pk in self.waiting:
            await database_sync_to_async(interrupt_orphan)(message)
        return await self.load_message(message.pk)

    # -- events from the channel layer

    async def chat_start(self, event):
        # This socket follows the turn from its first delta; a turn that started before it connected is followed
        # once subscribed (snapshot first), so a tab never gets the middle of an answer without its beginning.
        self.last_seq.setdefault(event["message_id"], 0)
        await self.send_json({**event, "type": "start"})

    async def chat_early(self, event):
        # A delta of a turn this socket asked for, before the turn's start (relay/fanout.Tab): the deltas that
        # follow the start take the group's way and go on from its seq.
        if event["message_id"] is not None:
            self.last_seq[event["message_id"]] = event["seq"]
        await self.send_json({**event, "type": "delta"})

    async def chat_bound(self, event):
        # The turn this socket asked for is announced: its deltas so far came early (relay/fanout.Tab.bound).
        message_id = event["message_id"]
        self.last_seq[message_id] = max(self.last_seq.get(message_id, 0), event["seq"])

    async def chat_thread(self, event):
        # The thread changed shape (a branch switched, a message inserted...): the tab fetches its path again.
        await self.send_json({"type": "thread", "origin": event.get("origin", "")})

    async def chat_waiting(self, event):
        # The answer waits for a free slot of its connection (gate.py): the tab says so until it starts.
        await self.send_json({**event, "type": "waiting"})

    async def chat_done(self, event):
        await self._final(event, "done")

    async def chat_error(self, event):
        await self._final(event, "error")

    async def _final(self, event, kind: str) -> None:
        self.end_replay(event["message_id"])
        await self.send_json({**event, "type": kind})

    async def send_stored(self, message: Message) -> None:
        html = await database_sync_to_async(render_message)(message)
        kind = "error" if message.status == Message.ERROR else "done"
        await self.send_json(
            {"type": kind, "message_id": message.pk, "seq": message.seq, "status": message.status, "html": html}
        )

    # -- database helpers

    @database_sync_to_async
    def load_message(self, message_id: int) -> Message | None:
        return (
            Message.objects.filter(pk=message_id, conversation_id=self.conversation_id)
            .select_related("conversation")
            .first()
        )
