"""What tests make again and again: a user's connection, WAV recordings (silence or a tone)."""

import io
import math
import struct
import wave

from playground.connections.models import Connection

SECRET = "sk-live-abcdefghijklmnop1234"


def add_connection(owner, name="Hosted", key=SECRET, url="https://api.example.com/v1") -> Connection:
    """A connection of `owner` with its key encrypted, as the connection form saves it."""
    connection = Connection(owner=owner, name=name, base_url=url)
    connection.set_key(key)
    connection.save()
    return connection


def wav(seconds: float = 0.5, rate: int = 16000, *, tone: bool = False) -> bytes:
    """Mono 16-bit WAV: silence, or with `tone` a sine a voice-upload probe accepts as a recording."""
    count = int(seconds * rate)
    if tone:
        frames = b"".join(struct.pack("<h", int(8000 * math.sin(i / 8))) for i in range(count))
    else:
        frames = b"\x00\x00" * count
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(frames)
    return buffer.getvalue()
