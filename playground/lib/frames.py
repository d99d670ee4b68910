"""The one frame boundary of every websocket consumer (chat, sharing, evaluate, any new one).

A frame is read only when it is a text frame holding a JSON object within inputs.MAX_FRAME_BYTES and
inputs.MAX_FRAME_DEPTH, without NaN or NUL, that names one of the consumer's frame kinds (`action`, else `type`).
Anything else is answered with one `invalid` frame naming what is wrong, and the socket stays open. A frame whose
handling fails is answered `failed` (its traceback goes to the log), so a tab waiting on a frame's id always hears
back exactly once. A frame for a socket that has gone is dropped without a word in the log.
"""

import logging
import re

from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.db import DatabaseError

from playground import inputs

try:  # daphne's websocket library: what a send to a socket that has gone raises (until daphne hears of its close)
    from autobahn.exception import Disconnected
except ImportError:  # another ASGI server
    Disconnected = ()

log = logging.getLogger(__name__)

FRAME_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
UNAVAILABLE = "The database is unavailable right now: nothing was done. Try again in a moment."
BROKEN = "Something went wrong on the server: nothing more was done. Try again."


def frame_id(frame: dict) -> str | None:
    """The tab's id for the frame when it is a well-formed one (replies carry it), else None."""
    value = frame.get("id")
    return value if isinstance(value, str) and FRAME_ID.match(value) else None


def kind_of(frame: dict) -> object:
    return frame.get("action") if "action" in frame else frame.get("type")


class FrameConsumer(AsyncJsonWebsocketConsumer):
    """Subclasses list the frame kinds they read in `frame_kinds()` and handle them in `receive_json`."""

    @classmethod
    def frame_kinds(cls) -> list[str]:
        raise NotImplementedError

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        try:
            frame = inputs.decode_frame(text_data, bytes_data)
        except inputs.NulError as exc:
            # Read, but not kept: the tab that sent it hears back under its id, in the words of the form's field.
            parsed = exc.parsed if isinstance(exc.parsed, dict) else {}
            await self.refuse(frame_id(parsed), inputs.nul_words(exc.field, "Nothing was sent"))
            return
        except inputs.InputError as exc:
            await self.refuse(None, f"{exc}.")
            return
        kind = kind_of(frame)
        if not isinstance(kind, str) or kind not in self.frame_kinds():
            shown = kind[:40] if isinstance(kind, str) else kind
            kinds = ", ".join(self.frame_kinds())
            await self.refuse(frame_id(frame), f"action: {shown!r} is not an action of this socket (one of {kinds}).")
            return
        try:
            await self.receive_json(frame, **kwargs)
        except DatabaseError:
            log.warning("websocket frame %r failed: database unavailable", kind)
            await self.send_json({"type": "failed", "id": frame_id(frame), "error": UNAVAILABLE})
        except Exception:
            log.exception("websocket frame %r failed", kind)
            await self.send_json({"type": "failed", "id": frame_id(frame), "error": BROKEN})

    async def __call__(self, scope, receive, send):
        # A frame for a socket that has gone is dropped: a tab closed while its frames were being answered (or a
        # group event came for it) is a normal event, not an error; its disconnect is on its way.
        async def send_unless_gone(message):
            try:
                await send(message)
            except Disconnected:
                log.debug("a %s frame to a websocket that has gone was dropped", message.get("type"))

        await super().__call__(scope, receive, send_unless_gone)

    async def refuse(self, id_: str | None, error: str) -> None:
        await self.send_json({"type": "invalid", "id": id_, "errors": [error]})
