"""The chat websocket: transport glue between a browser tab and the conversation's generations (see services)."""

import asyncio

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from playground import inputs
from playground.chat import services
from playground.chat.models import Conversation, Message


class ChatConsumer(AsyncJsonWebsocketConsumer):
    group = None

    async def connect(self):
        self.conversation_id = self.scope["url_route"]["kwargs"]["pk"]
        self.waiting: dict[int, list[dict]] = {}  # live deltas held until the message's snapshot arrives
        self.fallbacks: dict[int, asyncio.Task] = {}
        self.last_seq: dict[int, int] = {}
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.accept()
            await self.close(code=4403)
            return
        if not await self._owns(user):
            await self.accept()
            await self.close(code=4404)
            return
        self.group = services.conversation_group(self.conversation_id)
        # Join the group before accepting: once the client sees the socket open, no delta can pass it by.
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        for task in self.fallbacks.values():
            task.cancel()
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    @classmethod
    async def decode_json(cls, text_data):
        # Frames are small flat objects: anything deeper, non-finite or holding NUL is ignored, never a crash.
        try:
            data = inputs.loads(text_data or "", max_depth=4)
        except (ValueError, RecursionError):
            return {}
        return data if isinstance(data, dict) else {}

    async def receive_json(self, content, **kwargs):
        if not self.group:
            return
        try:
            message_id = int(content.get("message_id"))
            after = int(content.get("after") or 0)
        except (TypeError, ValueError):
            return
        if content.get("type") == "subscribe":
            await self.subscribe(message_id, after)
        elif content.get("type") == "stop" and await self._message(message_id):
            await services.request_stop(message_id)

    async def subscribe(self, message_id: int, after: int) -> None:
        message = await self._message(message_id)
        if message is None:
            return
        if message.status != Message.STREAMING:
            await self._send_final(message)
            return
        self.waiting[message_id] = []
        self.last_seq[message_id] = after
        await self.channel_layer.group_send(
            services.generation_group(message_id),
            {"type": "generation.snapshot", "message_id": message_id, "reply_to": self.channel_name},
        )
        self.fallbacks[message_id] = asyncio.create_task(self._fallback(message_id))

    async def _fallback(self, message_id: int) -> None:
        """No generator answered in time: it finished or its process died. The database has the rest."""
        await asyncio.sleep(services.SNAPSHOT_TIMEOUT)
        self.fallbacks.pop(message_id, None)
        if message_id not in self.waiting:
            return
        message = await self._message(message_id)
        if message is not None and message.status == Message.STREAMING:
            await database_sync_to_async(services.mark_interrupted)(message.conversation)
            message = await self._message(message_id)
        if message_id not in self.waiting:
            return  # the generator answered meanwhile
        if message is None:
            self.waiting.pop(message_id, None)
        elif message.status == Message.STREAMING:
            await self._deliver_snapshot(await services.snapshot_from_database(message))
        else:
            self.waiting.pop(message_id, None)
            await self._send_final(message)

    async def _deliver_snapshot(self, snapshot: dict) -> None:
        message_id = snapshot["message_id"]
        held = self.waiting.pop(message_id, [])
        await self.send_json({**snapshot, "type": "snapshot"})
        self.last_seq[message_id] = snapshot["seq"]
        for delta in held:
            await self.chat_delta(delta)

    # -- events from the channel layer

    async def chat_start(self, event):
        await self.send_json({**event, "type": "start"})

    async def chat_delta(self, event):
        message_id = event["message_id"]
        if message_id in self.waiting:
            self.waiting[message_id].append(event)
            return
        if event["seq"] <= self.last_seq.get(message_id, 0):
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

    async def chat_done(self, event):
        await self._final(event, "done")

    async def chat_error(self, event):
        await self._final(event, "error")

    async def _final(self, event, kind: str) -> None:
        message_id = event["message_id"]
        self.waiting.pop(message_id, None)
        fallback = self.fallbacks.pop(message_id, None)
        if fallback is not None:
            fallback.cancel()
        await self.send_json({**event, "type": kind})

    async def _send_final(self, message: Message) -> None:
        html = await database_sync_to_async(services.render_message)(message)
        kind = "error" if message.status == Message.ERROR else "done"
        await self.send_json(
            {"type": kind, "message_id": message.pk, "seq": message.seq, "status": message.status, "html": html}
        )

    # -- database helpers

    @database_sync_to_async
    def _owns(self, user) -> bool:
        return Conversation.objects.filter(pk=self.conversation_id, owner=user).exists()

    @database_sync_to_async
    def _message(self, message_id: int) -> Message | None:
        return (
            Message.objects.filter(pk=message_id, conversation_id=self.conversation_id)
            .select_related("conversation")
            .first()
        )
