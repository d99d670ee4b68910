"""A running answer's own channel, in the group `generation.<message pk>` any process can reach: stop and snapshot
requests arrive there. A part of Generation (generation.py), given what the requests reach: the answer's live view
(publishing.Live, which takes the snapshot) and its stop."""

import asyncio
from collections.abc import Callable
from contextlib import suppress

from channels.layers import InMemoryChannelLayer

from playground.chat.relay.publishing import Live


def generation_group(pk: int) -> str:
    return f"generation.{pk}"


async def join(layer, live: Live, stop: Callable[[], None]) -> tuple[str | None, asyncio.Task | None]:
    """Listen on a channel of our own, in the group any process can reach us through (stop, snapshot).

    Not with the in-memory layer: it serves one process, whose sockets find the generation in this process's
    registry (generation.running); a channel and a listener per answer would only cost time (each receive of
    that layer walks every channel and group it has)."""
    if isinstance(layer, InMemoryChannelLayer):
        return None, None
    channel = None
    try:
        channel = await layer.new_channel()
        await layer.group_add(generation_group(live.answer.message_id), channel)
    except Exception as exc:
        live.lost_live(exc)
        return channel, None
    return channel, asyncio.create_task(_listen(layer, channel, live, stop))


async def _listen(layer, channel: str, live: Live, stop: Callable[[], None]) -> None:
    while True:
        try:
            message = await layer.receive(channel)
        except Exception as exc:
            live.lost_live(exc)
            return
        if message.get("type") == "generation.close":
            return
        if message.get("type") == "generation.stop":
            stop()
        elif message.get("type") == "generation.snapshot" and message.get("reply_to"):
            live.followed_remotely()  # before the snapshot: each later delta goes to the asker through the layer
            await layer.send(message["reply_to"], live.snapshot())


async def close_listener(layer, channel: str, listener: asyncio.Task) -> None:
    """End the listener with a message rather than by cancelling it: a cancelled receive on the Redis layer
    can leave a blocking pop behind that swallows the next message for any websocket of this process."""
    with suppress(Exception):
        await layer.send(channel, {"type": "generation.close"})
    try:
        await asyncio.wait_for(asyncio.shield(listener), timeout=5)
    except (TimeoutError, Exception):
        listener.cancel()
        with suppress(asyncio.CancelledError, Exception):
            await listener
