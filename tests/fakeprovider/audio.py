"""A short tone in each speech format of the fake provider (wav and pcm by the stdlib, mp3 and opus by PyAV)."""

import functools
import io
import math
import struct
import wave

import av

CONTENT_TYPES = {"mp3": "audio/mpeg", "opus": "audio/ogg", "wav": "audio/wav", "pcm": "audio/pcm"}
SECONDS = 0.6


def samples(rate: int) -> bytes:
    """Mono 16-bit little-endian samples of a 440 Hz tone that fades out."""
    count = int(rate * SECONDS)
    return b"".join(
        struct.pack("<h", int(9000 * (1 - n / count) * math.sin(2 * math.pi * 440 * n / rate))) for n in range(count)
    )


@functools.cache
def tone(fmt: str, rate: int) -> bytes:
    if fmt == "pcm":
        return samples(rate)
    if fmt == "wav":
        out = io.BytesIO()
        with wave.open(out, "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(rate)
            wav.writeframes(samples(rate))
        return out.getvalue()
    rate = 48000 if fmt == "opus" else rate
    out = io.BytesIO()
    with av.open(out, "w", format="ogg" if fmt == "opus" else "mp3") as container:
        stream = container.add_stream("libopus" if fmt == "opus" else "libmp3lame", rate=rate, layout="mono")
        pcm = samples(rate)
        step = 1024
        for start in range(0, len(pcm) // 2, step):
            piece = pcm[start * 2 : (start + step) * 2]
            frame = av.AudioFrame(format="s16", layout="mono", samples=len(piece) // 2)
            frame.planes[0].update(piece)
            frame.sample_rate = rate
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


def wav_tone(seconds: float = 1.0, rate: int = 16000) -> bytes:
    """A steady 220 Hz tone as a wav file (a reference voice for uploads)."""
    out = io.BytesIO()
    with wave.open(out, "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(rate)
        clip.writeframes(
            b"".join(
                struct.pack("<h", int(8000 * math.sin(2 * math.pi * 220 * i / rate)))
                for i in range(int(seconds * rate))
            )
        )
    return out.getvalue()
