"""Multimodal input parts read from their actual bytes: images (Pillow), audio and video (PyAV), PDFs (pypdf).

In two steps, so that what a part costs is known before it is paid for:
1. `probe` reads the header only (dimensions, duration, page count), refuses in words what is over a limit
   (settings LOCAL_API_MEDIA_MAX_PIXELS, _MAX_SECONDS, _MAX_PAGES) and counts the part's tokens;
2. `decode` then decodes only what the description needs: an image reduced while it loads (Pillow's draft
   and reduce), no audio or video frame at all (their facts are in the header), at most the allowed pages of
   a PDF with pypdf's decompression limits lowered.
Both block and use the CPU: run them in `pool()`, whose few threads make parallel uploads wait their turn.
Every decoder's error becomes a MediaError (a 400 in words), never a 500.
"""

import base64
import binascii
import io
import math
import re
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache

from django.conf import settings

from playground.localapi.engines.generator import Media

MAX_BYTES = 20 * 1024 * 1024
# Image formats read; the others Pillow knows (EPS through Ghostscript, ICNS, ...) are refused unread.
IMAGE_FORMATS = ("PNG", "JPEG", "GIF", "WEBP", "BMP", "TIFF")
# Bytes one PDF stream may inflate to (pypdf's default is 75 MB per stream).
PDF_STREAM_BYTES = 16 * 1024 * 1024
# Packets demuxed (never decoded) to measure audio or video whose header gives no duration.
MAX_PACKETS = 200_000
_DATA_URI = re.compile(r"^data:([\w.+-]+/[\w.+-]+)?((?:;[\w-]+=[^;,]*)*)(;base64)?,(.*)$", re.S)

# Basic colour names for "dominant colours"; each pixel goes to the nearest one.
_PALETTE = {
    "black": (0, 0, 0),
    "white": (255, 255, 255),
    "grey": (128, 128, 128),
    "red": (220, 20, 20),
    "green": (30, 160, 40),
    "blue": (30, 60, 220),
    "yellow": (240, 220, 30),
    "orange": (245, 140, 20),
    "purple": (130, 40, 160),
    "pink": (245, 150, 190),
    "brown": (130, 80, 40),
    "cyan": (30, 200, 220),
}


class MediaError(ValueError):
    """The part's data is refused or cannot be decoded; the message says why (it becomes a 400)."""


@dataclass
class Probe:
    """What a part's header says: its kind, its facts and its tokens, known before it is decoded.

    Audio and video are complete here (`media`): their description needs nothing but the header."""

    kind: str  # image | audio | video | pdf
    data: bytes
    tokens: int
    info: dict
    media: Media | None = None


@cache
def pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=settings.LOCAL_API_MEDIA_WORKERS, thread_name_prefix="media")


def decode_data_uri(url: str) -> tuple[str, bytes]:
    match = _DATA_URI.match(url)
    if not match:
        raise MediaError("not a valid data: URI (expected data:<mime>;base64,<data>)")
    mime, _params, is_b64, payload = match.groups()
    if not is_b64:
        raise MediaError("data: URI must be base64-encoded (data:<mime>;base64,<data>)")
    if len(payload) > MAX_BYTES * 4 // 3 + 4:
        raise MediaError(f"data larger than {MAX_BYTES // (1024 * 1024)} MB")
    try:
        data = base64.b64decode(re.sub(r"\s+", "", payload), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MediaError(f"invalid base64 data ({exc})") from exc
    if not data:
        raise MediaError("empty data")
    return (mime or "application/octet-stream").lower(), data


def _nearest(rgb) -> str:
    return min(_PALETTE, key=lambda name: sum((a - b) ** 2 for a, b in zip(rgb, _PALETTE[name], strict=True)))


def _check_pixels(width: int, height: int, what: str) -> None:
    limit = settings.LOCAL_API_MEDIA_MAX_PIXELS
    if width * height > limit:
        raise MediaError(
            f"{what} of {width}×{height} px has {width * height:,} pixels, over the limit of {limit:,} "
            "(LOCAL_API_MEDIA_MAX_PIXELS); refused before decoding"
        )


def _check_seconds(seconds: float, what: str) -> None:
    limit = settings.LOCAL_API_MEDIA_MAX_SECONDS
    if seconds > limit:
        raise MediaError(f"{what} lasts {seconds:.1f} s, over the limit of {limit:g} s (LOCAL_API_MEDIA_MAX_SECONDS)")


# What Pillow raises on bytes it cannot read: broken headers, truncated data, bombs, bad parameters.
_IMAGE_ERRORS = (OSError, ValueError, SyntaxError, EOFError, IndexError, struct.error, MemoryError)


def _open_image(data: bytes):
    from PIL import Image, UnidentifiedImageError

    try:
        return Image.open(io.BytesIO(data), formats=IMAGE_FORMATS)
    except UnidentifiedImageError as exc:
        raise MediaError(f"not a decodable image (formats read: {', '.join(IMAGE_FORMATS)})") from exc
    except Image.DecompressionBombError as exc:
        # Pillow's own guard, at twice its MAX_IMAGE_PIXELS, fires while opening, before our check can.
        limit = settings.LOCAL_API_MEDIA_MAX_PIXELS
        raise MediaError(
            f"the image is over the limit of {limit:,} pixels (LOCAL_API_MEDIA_MAX_PIXELS): {exc}"
        ) from exc
    except _IMAGE_ERRORS as exc:
        raise MediaError(f"not a decodable image ({exc})") from exc


def probe_image(data: bytes) -> Probe:
    """Dimensions from the header (Image.open reads nothing more); tokens as the hosted vision models count
    them: a base cost plus one per 512-px tile."""
    image = _open_image(data)
    width, height = image.size
    _check_pixels(width, height, "the image")
    tokens = 85 + 170 * math.ceil(width / 512) * math.ceil(height / 512)
    info = {"width": width, "height": height, "format": image.format or "image", "mode": image.mode}
    return Probe(kind="image", data=data, tokens=tokens, info=info)


def describe_image(probe: Probe) -> Media:
    """Dominant colours from a 64-px thumbnail, decoded reduced where the format allows (JPEG's draft) and
    shrunk in its own mode before any conversion, so a large one-bit image never becomes a large RGB one."""
    from PIL import Image

    image = _open_image(probe.data)
    try:
        image.draft("RGB", (256, 256))
        if image.mode.startswith("I;16"):
            image = image.convert("I")
        image.thumbnail((64, 64))
        small = image.convert("RGB")
    except (*_IMAGE_ERRORS, Image.DecompressionBombError) as exc:
        raise MediaError(f"not a decodable image: {exc}") from exc
    counts: dict[str, int] = {}
    for count, rgb in small.getcolors(64 * 64) or []:
        name = _nearest(rgb)
        counts[name] = counts.get(name, 0) + count
    total = sum(counts.values()) or 1
    colours = [(name, round(100 * c / total)) for name, c in sorted(counts.items(), key=lambda kv: -kv[1])]
    colours = [(name, pct) for name, pct in colours if pct >= 5][:4] or colours[:1]
    info = {**probe.info, "colours": colours}
    listed = ", ".join(f"{name} ({pct}%)" for name, pct in colours)
    size = f"{info['width']}×{info['height']} px"
    summary = f"{size} {info['format']} image ({info['mode']}); dominant colours: {listed}."
    return Media(kind="image", info=info, tokens=probe.tokens, summary=summary)


def _header_duration(container, stream) -> float | None:
    if container.duration:
        return container.duration / 1_000_000
    if stream.duration and stream.time_base:
        return float(stream.duration * stream.time_base)
    return None


def _duration(container, stream, what: str) -> float:
    """The length from the header; without one, from the packets' timestamps, demuxed (never decoded) and
    stopped as soon as they pass the limit."""
    seconds = _header_duration(container, stream)
    if seconds is not None:
        _check_seconds(seconds, what)
        return seconds
    limit = settings.LOCAL_API_MEDIA_MAX_SECONDS
    start = end = None
    for count, packet in enumerate(container.demux(stream)):
        if count >= MAX_PACKETS:
            raise MediaError(f"{what} has no duration in its header and more than {MAX_PACKETS:,} packets")
        if packet.pts is None or packet.time_base is None:
            continue
        at = float(packet.pts * packet.time_base)
        start = at if start is None else min(start, at)
        end = max(end or at, at + float((packet.duration or 0) * packet.time_base))
        if end - start > limit:
            raise MediaError(
                f"{what} has no duration in its header and runs past the limit of {limit:g} s "
                "(LOCAL_API_MEDIA_MAX_SECONDS)"
            )
    return (end - start) if start is not None else 0.0


def _av_words(exc: Exception) -> str:
    """FFmpeg's reason without its error number and file name (`Invalid data found when processing input`)."""
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def _open_av(data: bytes, kind: str):
    import av

    try:
        # max_pixels reaches the decoders that probing opens: a huge frame is not allocated, its size reads as 0.
        options = {"probesize": str(5 * 1024 * 1024), "max_pixels": str(settings.LOCAL_API_MEDIA_MAX_PIXELS)}
        return av.open(io.BytesIO(data), options=options)
    except (av.FFmpegError, ValueError, OSError, EOFError, IndexError, MemoryError) as exc:
        raise MediaError(f"not decodable {kind} ({_av_words(exc)})") from exc


def probe_audio(data: bytes) -> Probe:
    """Everything from the header: no frame is decoded."""
    import av

    try:
        with _open_av(data, "audio") as container:
            if not container.streams.audio:
                raise MediaError("no audio stream in the data")
            stream = container.streams.audio[0]
            rate, channels, codec = stream.rate, stream.channels, stream.codec_context.name
            duration = _duration(container, stream, "the audio")
    except (av.FFmpegError, ValueError, OSError, EOFError, IndexError, MemoryError) as exc:
        if isinstance(exc, MediaError):
            raise
        raise MediaError(f"not decodable audio ({_av_words(exc)})") from exc
    summary = f"{duration:.2f} s of {codec} audio, {rate} Hz, {channels} channel{'s' if channels != 1 else ''}."
    info = {"duration": round(duration, 3), "sample_rate": rate, "channels": channels, "codec": codec}
    media = Media(kind="audio", info=info, tokens=max(1, math.ceil(duration * 25)), summary=summary)
    return Probe(kind="audio", data=data, tokens=media.tokens, info=info, media=media)


def probe_video(data: bytes, fps: int | None, max_frams: int | None) -> Probe:
    """Frames used = min(fps × T, max_frams), T the video length in seconds (spec 2.4 rule 2); everything from
    the header, no frame is decoded."""
    import av

    try:
        with _open_av(data, "video") as container:
            if not container.streams.video:
                raise MediaError("no video stream in the data")
            stream = container.streams.video[0]
            width, height, codec = stream.codec_context.width, stream.codec_context.height, stream.codec_context.name
            if not width or not height:
                raise MediaError(
                    f"the video's frame size is unreadable or over the limit of "
                    f"{settings.LOCAL_API_MEDIA_MAX_PIXELS:,} pixels (LOCAL_API_MEDIA_MAX_PIXELS)"
                )
            _check_pixels(width, height, "a video frame")
            native_fps = float(stream.average_rate or stream.guessed_rate or 0)
            duration = _duration(container, stream, "the video")
    except (av.FFmpegError, ValueError, OSError, EOFError, IndexError, MemoryError) as exc:
        if isinstance(exc, MediaError):
            raise
        raise MediaError(f"not decodable video ({_av_words(exc)})") from exc
    fps = fps or 1
    sampled = fps * duration
    frames = math.floor(sampled if max_frams is None else min(sampled, max_frams))
    frames = max(1, frames)
    summary = (
        f"{duration:.2f} s {codec} video, {width}×{height} px at {native_fps:g} fps; "
        f"{frames} frames used (fps {fps}" + (f", max_frams {max_frams}" if max_frams is not None else "") + ")."
    )
    info = {
        "duration": round(duration, 3),
        "width": width,
        "height": height,
        "native_fps": native_fps,
        "fps": fps,
        "max_frams": max_frams,
        "frames": frames,
        "codec": codec,
    }
    media = Media(kind="video", info=info, tokens=frames * 64, summary=summary)
    return Probe(kind="video", data=data, tokens=media.tokens, info=info, media=media)


# pypdf raises PyPdfError (LimitReachedError, PdfReadError, ...) on what it refuses, NotImplementedError on an
# unknown filter, and plain Python errors on some malformed files.
_PDF_ERRORS = (
    ValueError,
    KeyError,
    TypeError,
    AttributeError,
    IndexError,
    RecursionError,
    MemoryError,
    OSError,
    NotImplementedError,
)


def _pdf_limits():
    from pypdf import apply_configuration

    return apply_configuration(
        zlib_maximum_output_length=PDF_STREAM_BYTES,
        lzw_maximum_output_length=PDF_STREAM_BYTES,
        run_length_maximum_output_length=PDF_STREAM_BYTES,
        brotli_maximum_output_length=PDF_STREAM_BYTES,
        array_based_stream_maximum_output_length=PDF_STREAM_BYTES,
        stream_decoding_work_maximum_length=4 * PDF_STREAM_BYTES,
        image_maximum_buffer_size=PDF_STREAM_BYTES,
    )


def _pdf_error(exc: Exception) -> MediaError:
    from pypdf.errors import LimitReachedError

    if isinstance(exc, LimitReachedError):
        return MediaError(f"a PDF stream inflates past the limit of {PDF_STREAM_BYTES // (1024 * 1024)} MB ({exc})")
    return MediaError(f"not a readable PDF ({exc or type(exc).__name__})")


def probe_pdf(data: bytes) -> Probe:
    """The page count from the page tree; no content stream is read. Tokens are counted from the text later."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        with _pdf_limits():
            pages = len(PdfReader(io.BytesIO(data)).pages)
    except (PyPdfError, *_PDF_ERRORS) as exc:
        raise _pdf_error(exc) from exc
    limit = settings.LOCAL_API_MEDIA_MAX_PAGES
    if pages > limit:
        raise MediaError(f"the PDF has {pages} pages, over the limit of {limit} (LOCAL_API_MEDIA_MAX_PAGES)")
    return Probe(kind="pdf", data=data, tokens=10, info={"pages": pages})


def extract_pdf(probe: Probe) -> Media:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        with _pdf_limits():
            reader = PdfReader(io.BytesIO(probe.data))
            pages = [page.extract_text() or "" for page in reader.pages[: settings.LOCAL_API_MEDIA_MAX_PAGES]]
    except (PyPdfError, *_PDF_ERRORS) as exc:
        raise _pdf_error(exc) from exc
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    n_words = len(text.split())
    summary = f"PDF document, {len(pages)} page{'s' if len(pages) != 1 else ''}, {n_words} words of text extracted."
    from playground.localapi.tokens import count_tokens

    return Media(
        kind="pdf",
        info={"pages": len(pages), "words": n_words},
        tokens=count_tokens(text) + 10,
        summary=summary,
        text=text or "(no text layer found)",
    )


def probe(kind: str, mime: str, data: bytes, *, fps: int | None = None, max_frams: int | None = None, pdf=False):
    """Read one part's header. `kind` is image | audio | video; images may be PDFs when `pdf` is allowed."""
    if kind == "image":
        if mime == "application/pdf" or data[:5] == b"%PDF-":
            if not pdf:
                raise MediaError("PDF input is accepted only by the OCR model local/ocr")
            return probe_pdf(data)
        return probe_image(data)
    if kind == "audio":
        return probe_audio(data)
    return probe_video(data, fps, max_frams)


def decode(part: Probe) -> Media:
    """Decode what the description of a probed part needs."""
    if part.media is not None:
        return part.media
    if part.kind == "pdf":
        return extract_pdf(part)
    return describe_image(part)
