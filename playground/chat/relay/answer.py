"""One answer as it arrives: its row (once bound), what its provider sent so far (`Answer`), and what of that the
tabs have not been sent yet (`Unsent`, which the publisher takes, publishing.py). A part of Generation
(generation.py): the parts that save it (persistence.py) and show it (publishing.py) are given it."""

import asyncio
import time

from playground.chat.relay.chunks import merge_tool_call, whole_answer
from playground.chat.relay.usage import estimated_usage


class Unsent:
    """What arrived but is not yet published, and the event that wakes the publisher for it."""

    def __init__(self, timing: bool = False):
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.extra: dict[int, list[str]] = {}
        self.wake = asyncio.Event()
        self.timing = timing  # DEBUG_RELAY_TIMING: each delta carries when its first part arrived
        self.since: float | None = None

    def __bool__(self) -> bool:
        return bool(self.text or self.reasoning or self.extra)

    def add(self, text: str, reasoning: str) -> None:
        if self.timing and self.since is None:
            self.since = time.time()
        if text:
            self.text.append(text)
        if reasoning:
            self.reasoning.append(reasoning)
        self.wake.set()

    def add_choice(self, index: int, text: str) -> None:
        self.extra.setdefault(index, []).append(text)
        self.wake.set()

    def take(self) -> tuple[str, str, dict[str, str]]:
        """The text, reasoning and other choices (by index, as strings) that arrived since the last take."""
        text, self.text = "".join(self.text), []
        reasoning, self.reasoning = "".join(self.reasoning), []
        # String keys: the Redis layer's msgpack refuses integer map keys.
        extra, self.extra = {str(i): "".join(parts) for i, parts in self.extra.items()}, {}
        return text, reasoning, extra


class Answer:
    """What the provider sent for one assistant message, numbered: every delta takes the next `seq`."""

    def __init__(self, unsent: Unsent):
        # Known once the assistant row exists (Generation.bind); the upstream call may start before.
        self.message_id: int | None = None
        self.conversation_id: int | None = None
        self.unsent = unsent
        self.seq = 0
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.extra: dict[int, list[str]] = {}  # the other choices (n > 1)
        self.tool_calls: dict[int, dict] = {}
        self.usage: dict | None = None
        self.finish_reason = ""
        self.trace_id = ""
        self.started = time.monotonic()
        self.first_token: float | None = None
        self.chunks = 0

    def add(self, text: str, reasoning: str) -> None:
        if self.first_token is None:
            self.first_token = time.monotonic()
        self.seq += 1
        if text:
            self.content.append(text)
        if reasoning:
            self.reasoning.append(reasoning)
        self.unsent.add(text, reasoning)

    def apply(self, chunk: dict) -> None:
        """One streamed chunk."""
        self.chunks += 1
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            index = choice.get("index") or 0
            delta = choice.get("delta") or {}
            text = delta.get("content") or ""
            reasoning = delta.get("reasoning_content") or ""
            if index == 0:
                if choice.get("finish_reason"):
                    self.finish_reason = choice["finish_reason"]
                for call in delta.get("tool_calls") or []:
                    self.merge_tool_call(call)
                if text or reasoning:
                    self.add(text, reasoning)
            elif text:
                # The other choices (n > 1) stream too, numbered in the same sequence as the first.
                self.seq += 1
                self.extra.setdefault(index, []).append(text)
                self.unsent.add_choice(index, text)

    def merge_tool_call(self, call: dict) -> None:
        if self.first_token is None:
            self.first_token = time.monotonic()
        merge_tool_call(self.tool_calls, call)

    def apply_response(self, data: dict) -> None:
        """A whole (non-streamed) response."""
        answer = whole_answer(data)
        self.usage, self.finish_reason, self.extra = answer.usage, answer.finish_reason, answer.extra
        self.tool_calls.update(answer.tool_calls)
        if answer.content or answer.reasoning:
            self.add(answer.content, answer.reasoning)

    def choices(self) -> list[str]:
        return choice_texts(self.extra)

    def estimated_usage(self, body: dict) -> dict | None:
        """Token counts from what streamed, for an answer that ended before its provider sent them."""
        if not (self.content or self.reasoning):
            return None
        return estimated_usage(body, len(self.content), len(self.reasoning))

    def ms(self, moment: float | None) -> int | None:
        """Milliseconds from the start of the answer to `moment` (time.monotonic)."""
        return None if moment is None else round((moment - self.started) * 1000)


def choice_texts(extra: dict[int, list[str]]) -> list[str]:
    """The texts of the choices after the first (n > 1), in order of their index."""
    return ["".join(extra.get(index, [])) for index in range(1, max(extra, default=0) + 1)]
