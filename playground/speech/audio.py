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


def settle_wav(path) -> bool:
    """Write the true RIFF and data sizes into a finished WAV file streamed with unknown ones (0xFFFFFFFF), so
    that players, editors and Python's `wave` read its real length. False when the file is no such WAV."""
    with open(path, "r+b") as wav:
        head = wav.read(4096)
        total = wav.seek(0, 2)
        if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            return False
        at = 12
        while at + 8 <= len(head):
            chunk, size = struct.unpack_from("<4sI", head, at)
            if chunk == b"data":
                wav.seek(4)
                wav.write(struct.pack("<I", total - 8))
                wav.seek(at + 4)
                wav.write(struct.pack("<I", total - at - 8))
                return True
            if size == UNKNOWN_SIZE:
                return False
            at += 8 + size + (size & 1)
    return False
