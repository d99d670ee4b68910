"""A WAV header for raw PCM (byte ranges are playground/lib/downloads.py)."""

import struct

UNKNOWN_SIZE = 0xFFFFFFFF


def wav_header(sample_rate: int, data_size: int | None) -> bytes:
    """RIFF WAVE header for mono signed 16-bit little-endian PCM; `None` means still growing (unknown size)."""
    data = UNKNOWN_SIZE if data_size is None else data_size
    riff = UNKNOWN_SIZE if data_size is None else 36 + data_size
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        riff,
        b"WAVE",
        b"fmt ",
        16,
        1,
        1,
        sample_rate,
        sample_rate * 2,
        2,
        16,
        b"data",
        data,
    )
