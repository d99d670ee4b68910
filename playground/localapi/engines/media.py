"""Decoding of multimodal input parts from their actual bytes: images (Pillow), audio and video (PyAV),
PDFs (pypdf). Blocking and CPU-bound: call these from a thread.

The local API never fetches remote addresses (no SSRF): parts must carry base64 `data:` URIs.
"""

import base64
import binascii
import io
import math
import re

from playground.localapi.engines.generator import Media

MAX_BYTES = 20 * 1024 * 1024
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
    """The part's data cannot be decoded; the message says why (it becomes a 400)."""


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


def describe_image(data: bytes) -> Media:
    from PIL import Image, UnidentifiedImageError

    try:
        image = Image.open(io.BytesIO(data))
        image.load()
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        raise MediaError(f"not a decodable image ({exc})") from exc
    width, height, fmt = image.width, image.height, image.format or "image"
    small = image.convert("RGB")
    small.thumbnail((64, 64))
    counts: dict[str, int] = {}
    for count, rgb in small.getcolors(64 * 64) or []:
        name = _nearest(rgb)
        counts[name] = counts.get(name, 0) + count
    total = sum(counts.values()) or 1
    colours = [(name, round(100 * c / total)) for name, c in sorted(counts.items(), key=lambda kv: -kv[1])]
    colours = [(name, pct) for name, pct in colours if pct >= 5][:4] or colours[:1]
    # Image tokens as the hosted vision models count them: a base cost plus one per 512-px tile.
    tokens = 85 + 170 * math.ceil(width / 512) * math.ceil(height / 512)
    listed = ", ".join(f"{name} ({pct}%)" for name, pct in colours)
    summary = f"{width}×{height} px {fmt} image ({image.mode}); dominant colours: {listed}."
    info = {"width": width, "height": height, "format": fmt, "mode": image.mode, "colours": colours}
    return Media(kind="image", info=info, tokens=tokens, summary=summary)


def _duration(container) -> float:
    if container.duration:
        return container.duration / 1_000_000
    stream = next(iter(container.streams), None)
    if stream is not None and stream.duration and stream.time_base:
        return float(stream.duration * stream.time_base)
    return 0.0


def describe_audio(data: bytes) -> Media:
    import av

    try:
        with av.open(io.BytesIO(data)) as container:
            if not container.streams.audio:
                raise MediaError("no audio stream in the data")
            stream = container.streams.audio[0]
            rate, channels, codec = stream.rate, stream.channels, stream.codec_context.name
            duration = _duration(container)
            if not duration:
                samples = sum(frame.samples for frame in container.decode(audio=0))
                duration = samples / rate if rate else 0.0
    except av.error.FFmpegError as exc:
        raise MediaError(f"not decodable audio ({exc})") from exc
    summary = f"{duration:.2f} s of {codec} audio, {rate} Hz, {channels} channel{'s' if channels != 1 else ''}."
    info = {"duration": round(duration, 3), "sample_rate": rate, "channels": channels, "codec": codec}
    return Media(kind="audio", info=info, tokens=max(1, math.ceil(duration * 25)), summary=summary)


def describe_video(data: bytes, fps: int | None, max_frams: int | None) -> Media:
    """Frames used = min(fps × T, max_frams), T the video length in seconds (spec 2.4 rule 2)."""
    import av

    try:
        with av.open(io.BytesIO(data)) as container:
            if not container.streams.video:
                raise MediaError("no video stream in the data")
            stream = container.streams.video[0]
            width, height, codec = stream.codec_context.width, stream.codec_context.height, stream.codec_context.name
            native_fps = float(stream.average_rate or stream.guessed_rate or 0)
            duration = _duration(container)
            if not duration:
                frames = sum(1 for _ in container.decode(video=0))
                duration = frames / native_fps if native_fps else 0.0
    except av.error.FFmpegError as exc:
        raise MediaError(f"not decodable video ({exc})") from exc
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
    return Media(kind="video", info=info, tokens=frames * 64, summary=summary)


def extract_pdf(data: bytes) -> Media:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, ValueError, KeyError, TypeError) as exc:
        raise MediaError(f"not a readable PDF ({exc})") from exc
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


def describe(kind: str, url: str, *, fps: int | None = None, max_frams: int | None = None, pdf: bool = False):
    """Decode one part. `kind` is image | audio | video; images may be PDFs when `pdf` is allowed."""
    mime, data = decode_data_uri(url)
    if kind == "image":
        if mime == "application/pdf" or data[:5] == b"%PDF-":
            if not pdf:
                raise MediaError("PDF input is accepted only by the OCR model local/ocr")
            return extract_pdf(data)
        return describe_image(data)
    if kind == "audio":
        return describe_audio(data)
    return describe_video(data, fps, max_frams)
