"""Media that costs more than it weighs, built without ever holding the decoded form (for tests and bench/)."""

import io
import struct
import zlib
from functools import cache

import av
from PIL import Image


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


@cache
def pixel_png(width: int = 16000, height: int = 11000) -> bytes:
    """A one-bit PNG of width × height black pixels (16,000 × 11,000: about 21 KB), compressed row by row."""
    row = b"\x00" * (1 + (width + 7) // 8)
    squeeze = zlib.compressobj(9)
    idat = b"".join(squeeze.compress(row) for _ in range(height)) + squeeze.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


def pdf_of(stream: bytes, *, flate: bool = False, pages: int = 1) -> bytes:
    """A PDF of `pages` pages sharing one content stream (deflated as given when `flate`)."""
    filters = b"/Filter /FlateDecode " if flate else b""
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
        b"<< " + filters + b"/Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 200] /Contents 3 0 R /Resources << /Font << /F1 4 0 R >> >> >>"
    objects += [page] * pages
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


@cache
def inflating_pdf(megabytes: int = 400) -> bytes:
    """A PDF whose one content stream inflates to `megabytes` MB of spaces (about 400 KB for 400 MB)."""
    squeeze = zlib.compressobj(9)
    block = b" " * (1024 * 1024)
    stream = b"".join(squeeze.compress(block) for _ in range(megabytes)) + squeeze.flush()
    return pdf_of(stream, flate=True)


class _Pipe:
    """A write-only file: the muxer cannot seek back, so it writes no duration into the header."""

    def __init__(self):
        self.data = bytearray()

    def write(self, chunk) -> int:
        self.data += chunk
        return len(chunk)


@cache
def headerless_audio(seconds: int = 700, rate: int = 8000) -> bytes:
    """Matroska of FLAC silence, written as a stream: no duration in its header (about 200 KB for 700 s)."""
    pipe = _Pipe()
    with av.open(pipe, "w", format="matroska") as container:
        stream = container.add_stream("flac", rate=rate, layout="mono")
        for second in range(seconds):
            frame = av.AudioFrame(format="s16", layout="mono", samples=rate)
            frame.planes[0].update(bytes(frame.planes[0].buffer_size))
            frame.sample_rate, frame.pts = rate, second * rate
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return bytes(pipe.data)


@cache
def headerless_video(seconds: int = 700) -> bytes:
    """Matroska of a 16 × 16 px video at 1 fps, written as a stream: no duration in its header."""
    pipe = _Pipe()
    with av.open(pipe, "w", format="matroska") as container:
        stream = container.add_stream("mpeg4", rate=1)
        stream.width, stream.height, stream.pix_fmt = 16, 16, "yuv420p"
        image = Image.new("RGB", (16, 16), (30, 60, 220))
        for second in range(seconds):
            frame = av.VideoFrame.from_image(image)
            frame.pts = second
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return bytes(pipe.data)


@cache
def huge_frame_video(width: int = 6000, height: int = 5000) -> bytes:
    """One black frame of width × height px in MP4 (30,000,000 pixels: about 320 KB)."""
    out = io.BytesIO()
    with av.open(out, "w", format="mp4") as container:
        stream = container.add_stream("mpeg4", rate=1)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        frame = av.VideoFrame(width, height, "yuv420p")
        for plane in frame.planes:
            plane.update(bytes(plane.buffer_size))
        for packet in [*stream.encode(frame), *stream.encode()]:
            container.mux(packet)
    return out.getvalue()
