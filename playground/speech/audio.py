"""Byte-level audio helpers: a WAV header for raw PCM, and single-range requests over a header + a file."""

import re
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


# At most 18 digits (an exabyte): longer numbers are not a range we can serve, and int() of thousands of
# digits is refused by Python. A Range that does not match is ignored and the whole file is served.
_RANGE = re.compile(r"^bytes=(\d{0,18})-(\d{0,18})$")


def parse_range(header: str, size: int) -> tuple[int, int] | bool | None:
    """(start, end inclusive) of a single byte range; None to serve the whole file; False when unsatisfiable."""
    match = _RANGE.match(header.strip()) if header else None
    if not match:
        return None
    first, last = match.groups()
    if not first and not last:
        return None
    if not first:
        suffix = int(last)
        if suffix == 0 or size == 0:
            return False
        return max(0, size - suffix), size - 1
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    if start >= size or end < start:
        return False
    return start, end
