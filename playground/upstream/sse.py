"""Server-sent events parsed from raw bytes, once: split on blank lines, keep only the `data` field.

The relay reads every chunk of every stream, so this is the per-chunk hot path: no per-line objects, no str
decoding of what is not data, and JSON decoded straight from bytes (orjson). `event`, `id`, `retry` and comment
lines are ignored (chat completion streams carry everything in `data`).
"""

import orjson

DONE = b"[DONE]"


class Parser:
    """Feed it the bytes of the response as they arrive; it returns the data of each complete event."""

    __slots__ = ("_buffer",)

    def __init__(self):
        self._buffer = b""

    def feed(self, data: bytes) -> list[bytes]:
        buffer = self._buffer + data if self._buffer else data
        if b"\r" in buffer:
            # CRLF and lone CR line ends (both allowed by the SSE grammar) become LF. A CR at the very end may be
            # the first half of a CRLF, so it waits for the next read, unless it ends a blank line (then the
            # event is complete either way; an LF after it only makes an empty event, which is skipped).
            keep_cr = buffer.endswith(b"\r")
            buffer = (buffer[:-1] if keep_cr else buffer).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if keep_cr:
                buffer += b"\n" if buffer.endswith(b"\n") else b"\r"
        events = buffer.split(b"\n\n")
        self._buffer = events.pop()
        out = []
        for event in events:
            if event.startswith(b"data:") and b"\n" not in event:  # the common case: one data line
                out.append(event[6:] if event[5:6] == b" " else event[5:])
                continue
            data = [
                line[6:] if line[5:6] == b" " else line[5:] for line in event.split(b"\n") if line.startswith(b"data:")
            ]
            if data:
                out.append(b"\n".join(data))
        return out

    @property
    def pending(self) -> bytes:
        """What was received after the last complete event."""
        return self._buffer


loads = orjson.loads


def dumps(value) -> bytes:
    """A request body as JSON bytes (non-str keys and non-JSON values raise TypeError, as json.dumps does)."""
    return orjson.dumps(value)
