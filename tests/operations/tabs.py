"""A tab without a browser: a websocket that follows one answer the way static/js/chat/stream.js does (a snapshot,
then the deltas after its seq, each once), and reconnects when its socket closes, at once on the restart code."""

import asyncio
import json
import random
from dataclasses import dataclass, field

import websockets

from playground.lib.drain import RECONNECT

CSRF = "abcdefghijklmnopqrstuvwxyz012345"


def cookie_of(session: str) -> str:
    return f"sessionid={session}; csrftoken={CSRF}"


@dataclass
class Tab:
    host: str  # 127.0.0.1:port, the balancer's or a process's
    cookie: str
    conversation_pk: int
    message_id: int
    text: str = ""
    seq: int = 0
    status: str = ""
    closes: list = field(default_factory=list)  # the close codes this tab's sockets ended with
    snapshots: int = 0
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    diverged: list = field(default_factory=list)  # snapshots that did not continue what the tab showed

    async def follow(self, timeout: float = 60) -> "Tab":
        await asyncio.wait_for(self._follow(), timeout)
        return self

    async def _follow(self) -> None:
        while not self.status:
            try:
                async with websockets.connect(
                    f"ws://{self.host}/ws/chat/{self.conversation_pk}/",
                    additional_headers={"Cookie": self.cookie, "Origin": f"http://{self.host}"},
                    open_timeout=10,
                ) as ws:
                    self.opened.set()
                    await ws.send(json.dumps({"type": "subscribe", "message_id": self.message_id, "after": self.seq}))
                    async for raw in ws:
                        self._handle(json.loads(raw))
                        if self.status:
                            return
                code = ws.close_code
            except (OSError, websockets.exceptions.WebSocketException, TimeoutError) as exc:
                code = getattr(exc, "code", None) or type(exc).__name__
            self.closes.append(code)
            await asyncio.sleep(0.1 + random.random() * 0.2 if code == RECONNECT else 0.5)

    def _handle(self, event: dict) -> None:
        if event.get("message_id") != self.message_id:
            return
        kind = event["type"]
        if kind == "snapshot":
            # What the page does: the snapshot replaces the article's text (it must continue what was shown).
            if not event["content"].startswith(self.text) and not self.text.startswith(event["content"]):
                self.diverged.append((self.text, event["content"]))
            if event["seq"] >= self.seq:
                self.text, self.seq = event["content"], event["seq"]
            self.snapshots += 1
        elif kind == "delta" and event["seq"] > self.seq:
            self.text += event.get("text") or ""
            self.seq = event["seq"]
        elif kind in ("done", "error"):
            self.status = event["status"]
