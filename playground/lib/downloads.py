"""Every file the playground serves: one response with an RFC 6266 name, single byte ranges and HEAD.

Bodies are async iterators: under ASGI, Django reads a synchronous iterator whole into memory before it
sends a byte, which a large audio file must not cost.
"""

import asyncio
import re
import unicodedata
from collections.abc import AsyncIterator, Callable
from typing import BinaryIO
from urllib.parse import quote

from django.http import FileResponse, HttpResponse

CHUNK = 64 * 1024

# At most 18 digits (an exabyte): longer numbers are not a range we can serve, and int() of thousands of
# digits is refused by Python. A Range that does not match is ignored and the whole file is served.
_RANGE = re.compile(r"^bytes=(\d{0,18})-(\d{0,18})$")
_UNSAFE = re.compile(r'[\x00-\x1f\x7f"\\]')


def disposition(filename: str, *, inline: bool = False) -> str:
    """A Content-Disposition value (RFC 6266): `filename` in ASCII, and `filename*` in UTF-8 when it differs."""
    kind = "inline" if inline else "attachment"
    plain = unicodedata.normalize("NFKD", filename).encode("ascii", "ignore").decode()
    plain = _UNSAFE.sub("_", plain).strip() or "download"
    header = f'{kind}; filename="{plain}"'
    if plain != filename:
        header += f"; filename*=UTF-8''{quote(filename, safe='')}"
    return header


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


async def file_chunks(
    open_file: Callable[[], BinaryIO], start: int, end: int, prefix: bytes = b""
) -> AsyncIterator[bytes]:
    """Bytes start..end (inclusive) of `prefix` followed by the file `open_file()` opens, a chunk at a time."""
    if start < len(prefix):
        yield prefix[start : end + 1]
    position = max(start - len(prefix), 0)
    remaining = end + 1 - len(prefix) - position
    if remaining <= 0:
        return
    source = await asyncio.to_thread(open_file)
    try:
        await asyncio.to_thread(source.seek, position)
        while remaining > 0:
            data = await asyncio.to_thread(source.read, min(CHUNK, remaining))
            if not data:
                return
            remaining -= len(data)
            yield data
    finally:
        await asyncio.to_thread(source.close)


async def _once(data: bytes) -> AsyncIterator[bytes]:
    if data:
        yield data


def serve(
    request,
    chunks: Callable[[int, int], AsyncIterator[bytes]],
    *,
    size: int,
    content_type: str,
    filename: str,
    inline: bool = False,
) -> HttpResponse:
    """The whole file (200), one range of it (206) or a 416; `chunks(start, end)` yields those bytes.

    A HEAD gets the same headers and no body, and nothing is read.
    """
    wanted = parse_range(request.headers.get("Range", ""), size)
    if wanted is False:
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        return response
    start, end = wanted if wanted else (0, size - 1)
    body = chunks(start, end) if request.method != "HEAD" and size else _once(b"")
    response = FileResponse(body, status=206 if wanted else 200, content_type=content_type)
    response["Content-Length"] = str(max(0, end - start + 1))
    if wanted:
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
    response["Accept-Ranges"] = "bytes"
    response["Content-Disposition"] = disposition(filename, inline=inline)
    return response


def serve_file(
    request,
    open_file: Callable[[], BinaryIO],
    *,
    size: int,
    content_type: str,
    filename: str,
    inline: bool = False,
    prefix: bytes = b"",
) -> HttpResponse:
    """A stored file (after `prefix`, e.g. a WAV header for raw PCM); `size` is the file's, without the prefix."""
    return serve(
        request,
        lambda start, end: file_chunks(open_file, start, end, prefix),
        size=len(prefix) + size,
        content_type=content_type,
        filename=filename,
        inline=inline,
    )


def serve_bytes(request, content: bytes, *, content_type: str, filename: str, inline: bool = False) -> HttpResponse:
    """Bytes already in memory (a provider's file) as a download."""
    return serve(
        request,
        lambda start, end: _once(content[start : end + 1]),
        size=len(content),
        content_type=content_type,
        filename=filename,
        inline=inline,
    )
