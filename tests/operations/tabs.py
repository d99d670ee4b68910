"""A tab without a browser: a websocket that follows one answer the way static/js/chat/stream.js does (a snapshot,
then the deltas after its seq, each once), and reconnects when its socket closes, at once on the restart code."""

import asyncio
import json
import random
from dataclasses import dataclass, field

import websockets

from playground.lib.drain import RECONNECT

CSRF = "abcdefghijklmnopqrstuvwxyz012345"
SILENCE = 8  # seconds without an event after which a tab asks for its answer again


def cookie_of(session: str) -> str:
    return f"sessionid={session}; csrftoken={CSRF}"


@dataclass
class Tab:
    host: str  # 127.0.0.1:port, the balancer's or a process's
    cookie: str
    conversation_pk: int
    message_id: int | None = None  # None: the conversation's next answer (its `start` names it)
    text: str = ""
    seq: int = 0
    status: str = ""
    closes: list = field(default_factory=list)  # the close codes this tab's sockets ended with
    snapshots: int = 0
    stored_final: bool = False  # its end came as the saved answer whole (after a reconnect), not as deltas
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    diverged: list = field(default_factory=list)  # snapshots that did not continue what the tab showed
    log: list = field(default_factory=list)  # (what, seq, length, sockets closed before): for a failure's message
    first_host: str = ""  # where its first socket goes, when not `host` (as if the balancer had sent it there)

    async def follow(self, timeout: float = 60) -> "Tab":
        """Until the answer's end, or `timeout` (then `status` says "timed out" and the test says which)."""
        try:
            await asyncio.wait_for(self._follow(), timeout)
        except TimeoutError:
            self.status = f"timed out (seq {self.seq}, closes {self.closes})"
        return self

    async def _follow(self) -> None:
        while not self.status:
            host = self.first_host if self.first_host and not self.closes else self.host
            try:
                async with websockets.connect(
                    f"ws://{host}/ws/chat/{self.conversation_pk}/",
                    additional_headers={"Cookie": self.cookie, "Origin": f"http://{host}"},
                    open_timeout=10,
                ) as ws:
                    if self.message_id is not None:
                        self.opened.set()
                        frame = {"type": "subscribe", "message_id": self.message_id, "after": self.seq}
                        await ws.send(json.dumps(frame))
                    else:
                        await ws.send(json.dumps({"type": "ping"}))  # the pong: it is in the group, reading
                    while True:
                        try:
                            raw = await asyncio.wait_for(ws.recv(), SILENCE)
                        except TimeoutError:
                            if self.message_id is None:
                                continue
                            # Nothing for a while: ask again, as a reload would (the relay can lose a final event
                            # under load, docs/performance.md; counted in `log` so the test can say so).
                            self.log.append(("asked again", self.seq))
                            frame = {"type": "subscribe", "message_id": self.message_id, "after": self.seq}
                            await ws.send(json.dumps(frame))
                            continue
                        self._handle(json.loads(raw))
                        if self.status:
                            return
                code = ws.close_code
            except (OSError, websockets.exceptions.WebSocketException, TimeoutError) as exc:
                code = getattr(exc, "code", None) or type(exc).__name__
            self.closes.append(code)
            await asyncio.sleep(0.1 + random.random() * 0.2 if code == RECONNECT else 0.5)

    def _handle(self, event: dict) -> None:
        kind = event["type"]
        if kind == "pong":
            self.opened.set()
            return
        if kind == "start" and self.message_id is None:
            self.message_id = event["message_id"]
        if event.get("message_id") != self.message_id:
            return
        if kind == "snapshot":
            # What the page does: the snapshot replaces the article's text (it must continue what was shown).
            if not event["content"].startswith(self.text) and not self.text.startswith(event["content"]):
                self.diverged.append((self.text, event["content"]))
            if event["seq"] >= self.seq:
                self.text, self.seq = event["content"], event["seq"]
            self.snapshots += 1
            self.log.append(("snapshot", event["seq"], len(event["content"]), len(self.closes)))
        elif kind == "delta" and event["seq"] > self.seq:
            self.text += event.get("text") or ""
            self.seq = event["seq"]
        elif kind == "delta":
            self.log.append(("late delta", event["seq"], len(event.get("text") or ""), self.seq))
        elif kind in ("done", "error"):
            self.status = event["status"]
            if event["seq"] > self.seq:
                # Its last deltas never reached it (handed over as its answer ended, or dropped on the way): the
                # end brings the saved answer whole, which the page puts in place of what it showed (stream.js).
                # What it showed before must be the saved answer's beginning; the test checks that.
                self.stored_final = True
