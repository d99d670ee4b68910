"""Serve a file with HTTP Range support (audio and video seek; a download resumes).

Small and self-contained on purpose: when playground/lib/downloads.py lands, this module can give way to it.
"""

import re
from pathlib import Path

from django.http import HttpResponse, StreamingHttpResponse

CHUNK = 64 * 1024
RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """The first byte and the last byte (inclusive) asked for, or None when the range cannot be satisfied.

    Raises ValueError for a header that is not a single byte range (the whole file is served then)."""
    match = RANGE.match(header.strip())
    if not match or match.groups() == ("", ""):
        raise ValueError(header)
    first, last = match.groups()
    if first == "":
        length = int(last)
        if length == 0 or size == 0:
            return None
        return max(0, size - length), size - 1
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    if start >= size or end < start:
        return None
    return start, end


def _read(path: Path, start: int, length: int):
    with path.open("rb") as handle:
        handle.seek(start)
        while length > 0:
            chunk = handle.read(min(CHUNK, length))
            if not chunk:
                return
            length -= len(chunk)
            yield chunk


def ranged_response(request, path: Path, content_type: str, filename: str, *, inline: bool = True) -> HttpResponse:
    size = path.stat().st_size
    start, end, status = 0, size - 1, 200
    header = request.headers.get("Range")
    if header:
        try:
            wanted = parse_range(header, size)
        except ValueError:
            wanted = (0, size - 1) if size else None
            header = None
        if wanted is None:
            response = HttpResponse(status=416)
            response["Content-Range"] = f"bytes */{size}"
            return response
        start, end = wanted
        status = 206 if header else 200
    length = max(0, end - start + 1)
    response = StreamingHttpResponse(_read(path, start, length), status=status, content_type=content_type)
    response["Content-Length"] = str(length)
    response["Accept-Ranges"] = "bytes"
    if status == 206:
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
    safe = re.sub(r"[^A-Za-z0-9._ -]", "_", filename)[:150] or "file"
    response["Content-Disposition"] = f'{"inline" if inline else "attachment"}; filename="{safe}"'
    return response
