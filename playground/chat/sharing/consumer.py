"""The live-follow websocket of a shared conversation: read-only, under the share's token.

It follows the conversation's group (the owner's generations publish there; through this process's inlet,
relay/fanout.py) with the chat's snapshot + sequence replay, renders messages as a viewer sees them, and closes when
the link is revoked or expires.
"""

import asyncio

from channels.db import database_sync_to_async

from playground.chat.models import Message
from playground.chat.relay import fanout
from playground.chat.relay.fanout import LocalFollower
from playground.chat.relay.publishing import conversation_group
from playground.chat.replay import Replay
from playground.chat.sharing import live
from playground.lib.frames import FrameConsumer
from playground.lib.sockets import AccountSockets
from playground.sharing.models import WATCH_BEAT

GONE = 4404
MAX_PATH = 10_000  # message ids a viewer may name in "since"

# Renders in progress, shared by the viewers of a share that ask for the same messages at once (a turn's start or
# end reaches every viewer together): one thread hop and one render instead of one per viewer.
_renders: dict[tuple, asyncio.Future] = {}


async def _shared(function, share, *args):
    key = (function.__name__, share.pk, *args)
    task = _renders.get(key)
    if task is None:
        task = asyncio.ensure_future(database_sync_to_async(function)(share, *args))
        _renders[key] = task
        task.add_done_callback(lambda _: _renders.pop(key, None))
    return await asyncio.shield(task)


class ShareConsumer(AccountSockets, LocalFollower, Replay, FrameConsumer):
    groups_joined: tuple = ()
    follows_unknown = False  # a turn's deltas count once the turn was appended (chat_start)

    async def connect(self):
        self.start_replay()
        self.path: list[int] = []  # the messages the viewer's page shows, in order
        self.beat_task = None
        token = self.scope["url_route"]["kwargs"]["token"]
        share = await database_sync_to_async(live.live_share)(token, self.scope.get("user"))
        if share is None:
            await self.accept()
            await self.close(code=GONE)
            return
        self.share = share
        self.conversation_id = share.source_id
        # The conversation's events come through this process's inlet (fanout.py), the share's to this socket.
        self.groups_joined = (conversation_group(share.source_id), share.group)
        await fanout.follow(self.groups_joined[0], self)
        await self.channel_layer.group_add(share.group, self.channel_name)
        await database_sync_to_async(live.watch)(share, self.channel_name)
        await self.accept()
        self.beat_task = asyncio.create_task(self._beat())

    async def disconnect(self, code):
        self.stop_replay()
        if self.beat_task is not None:
            self.beat_task.cancel()
        if self.groups_joined:
            conversation, share = self.groups_joined
            await self.stop_following(conversation)
            await self.channel_layer.group_discard(share, self.channel_name)
            await database_sync_to_async(live.unwatch)(self.channel_name)

    async def _beat(self) -> None:
        """Keep counting as a watcher, and end the socket of a link that expired meanwhile."""
        while True:
            await asyncio.sleep(WATCH_BEAT)
            if not await database_sync_to_async(live.still_open)(self.share.pk, self.scope.get("user")):
                await self.share_revoked({})
                return
            await database_sync_to_async(live.beat)(self.channel_name)

    @classmethod
    def frame_kinds(cls) -> list[str]:
        return ["since", "subscribe"]

    async def receive_json(self, content, **kwargs):
        if not self.groups_joined:
            return
        try:
            after = int(content.get("after") or 0)
            message_id = int(content.get("message_id") or 0)
            have = [int(pk) for pk in (content.get("have") or [])[:MAX_PATH]]
        except (TypeError, ValueError):
            return
        if content.get("type") == "since":
            # An older page names no ids: it shows the path up to `after`.
            if not have and after:
                have = [pk for pk, _, _ in await _shared(live.render_path, self.share, after)]
            self.path = have
            await self._follow_path()
        elif content.get("type") == "subscribe" and message_id:
            await self.subscribe(message_id, after)

    async def _follow_path(self, upto: int | None = None) -> None:
        """Make the viewer's page the owner's thread: append the messages it lacks (a new turn's question and its
        answer's placeholder; following those still streaming), and when the path changed shape (a branch switched,
        an answer regenerated, a message edited, deleted, inserted or picked) send its order: the page drops what
        is no longer on it."""
        rows = await _shared(live.render_path, self.share, upto)
        shown, expected = set(self.path), list(self.path)
        for message_id, status, html in rows:
            if message_id in shown:
                continue
            expected.append(message_id)
            await self.send_json({"type": "append", "message_id": message_id, "html": html})
            if status == Message.STREAMING and message_id not in self.last_seq:
                await self.subscribe(message_id, 0)
        path = [message_id for message_id, _, _ in rows]
        if upto:  # messages the page shows beyond `upto` stay (a later turn's start reached it first)
            path += [pk for pk in expected if pk > upto and pk not in path]
        if path != expected:
            await self.send_json({"type": "thread", "ids": path})
        self.path = path

    async def load_message(self, message_id: int) -> Message | None:
        return await database_sync_to_async(live.message_for)(self.conversation_id, message_id)

    async def send_stored(self, message: Message) -> None:
        await self._send_final(message.pk)

    async def _send_final(self, message_id: int, event: dict | None = None) -> None:
        if message_id not in self.path:
            await self._follow_path()
            return
        html = await _shared(live.render_one, self.share, message_id)
        if html:
            if event and event.get("replaced") in self.path:
                self.path.remove(event["replaced"])
            kind = "error" if event and event.get("type") == "chat.error" else "done"
            await self.send_json({"type": kind, "message_id": message_id, "html": html, **_replaced(event)})

    # -- events from the channel layer

    async def chat_start(self, event):
        await self._follow_path(event["message_id"])

    async def chat_thread(self, event):
        await self._follow_path()

    async def chat_done(self, event):
        await self._final(event)

    async def chat_waiting(self, event):
        """An answer waiting for a free slot of its connection: viewers see it once it starts."""

    async def chat_error(self, event):
        await self._final(event)

    async def _final(self, event) -> None:
        message_id = event["message_id"]
        self.end_replay(message_id)
        self.last_seq.pop(message_id, None)
        await self._send_final(message_id, event)

    async def share_changed(self, event):
        """The owner edited the link's settings: a viewer it no longer admits is closed out."""
        if not await database_sync_to_async(live.still_open)(self.share.pk, self.scope.get("user")):
            await self.share_revoked(event)

    async def share_updated(self, event):
        await self.send_json({"type": "updated"})

    async def share_revoked(self, event):
        await self.send_json({"type": "revoked"})
        await self.close(code=GONE)


def _replaced(event: dict | None) -> dict:
    return {"replaced": event["replaced"]} if event and event.get("replaced") else {}
