"""Media by its header first: bombs are refused in words before they are decoded (issue "Every input", item 4)."""

import asyncio
import struct
import threading
import time
import zlib

import pytest

from tests.localapi import bombs
from tests.localapi.test_chat_media import ask, content, data_uri, png


def image(url: str) -> dict:
    return {"type": "image_url", "image_url": {"url": url}}


def refusal(response) -> str:
    assert response.status_code == 400, response.text
    return response.json()["message"]


def test_a_one_bit_pixel_bomb_is_refused_from_its_header(api):
    bomb = bombs.pixel_png()
    assert len(bomb) < 25_000
    message = refusal(ask(api, "local/vision", image(data_uri("image/png", bomb))))
    assert message.startswith("messages[0].content[1]: ")
    assert "16000×11000 px" in message and "176,000,000 pixels" in message
    assert "LOCAL_API_MEDIA_MAX_PIXELS" in message


def test_an_image_past_pillows_own_bomb_guard_is_refused_in_the_same_words(api):
    message = refusal(ask(api, "local/vision", image(data_uri("image/png", bombs.pixel_png(20000, 20000)))))
    assert "over the limit of 25,000,000 pixels (LOCAL_API_MEDIA_MAX_PIXELS)" in message


def test_a_video_frame_over_the_pixel_limit_is_refused_without_being_allocated(api):
    part = {"type": "video_url", "video_url": {"url": data_uri("video/mp4", bombs.huge_frame_video())}}
    message = refusal(ask(api, "local/omni", part))
    assert "over the limit of 25,000,000 pixels (LOCAL_API_MEDIA_MAX_PIXELS)" in message


def undecodable_png(width: int, height: int) -> bytes:
    """A PNG whose header is sound and whose pixel data is not: only decoding it can fail."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    png = bombs.pixel_png.__wrapped__(1, 1)
    ihdr = bombs._chunk(b"IHDR", header)
    return png[:8] + ihdr + bombs._chunk(b"IDAT", zlib.compress(b"not pixels")) + bombs._chunk(b"IEND", b"")


def test_tokens_are_counted_from_headers_and_a_request_over_the_window_is_refused_before_decoding(api):
    parts = [image(data_uri("image/png", undecodable_png(5000, 5000))) for _ in range(3)]
    message = refusal(ask(api, "local/vision", *parts))
    # Decoding would have said "not a decodable image"; the count of 3 × 17,085 tokens came first.
    assert "exceed the context window of model local/vision (32768 tokens)" in message
    assert "decodable" not in message


def test_a_broken_image_is_a_400_in_words(api):
    message = refusal(ask(api, "local/vision", image(data_uri("image/png", undecodable_png(40, 20)))))
    assert message.startswith("messages[0].content[1]: not a decodable image")


def test_a_pdf_whose_stream_inflates_to_400_mb_is_a_400_in_words(api):
    bomb = bombs.inflating_pdf()
    assert len(bomb) < 500_000
    message = refusal(ask(api, "local/ocr", image(data_uri("application/pdf", bomb))))
    assert "a PDF stream inflates past the limit of 16 MB" in message


def test_a_pdf_over_the_page_limit_is_refused_before_its_text_is_read(api):
    many = bombs.pdf_of(b"BT /F1 18 Tf 40 100 Td (page) Tj ET", pages=51)
    message = refusal(ask(api, "local/ocr", image(data_uri("application/pdf", many))))
    assert "the PDF has 51 pages, over the limit of 50 (LOCAL_API_MEDIA_MAX_PAGES)" in message


@pytest.mark.parametrize(
    "broken",
    [
        b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog",
        bombs.pdf_of(b"x").replace(b"<< /Length", b"<< /Filter /NoSuchFilter /Length"),
    ],
)
def test_an_unreadable_pdf_is_a_400_in_words(api, broken):
    message = refusal(ask(api, "local/ocr", image(data_uri("application/pdf", broken))))
    assert "PDF" in message


@pytest.mark.parametrize(
    ("part", "kind", "bomb"),
    [("audio_url", "audio", bombs.headerless_audio), ("video_url", "video", bombs.headerless_video)],
)
def test_media_without_a_duration_in_its_header_is_measured_without_decoding(api, part, kind, bomb):
    long = {"type": part, part: {"url": data_uri(f"{kind}/x-matroska", bomb())}}
    message = refusal(ask(api, "local/omni", long))
    assert f"the {kind} has no duration in its header and runs past the limit of 600 s" in message
    short = {"type": part, part: {"url": data_uri(f"{kind}/x-matroska", bomb(5))}}
    assert "5.00 s" in content(ask(api, "local/omni", short))


def test_media_over_the_duration_limit_in_its_header_is_refused(api):
    from tests.localapi.test_chat_media import mp4

    long = {"type": "video_url", "video_url": {"url": data_uri("video/mp4", mp4(seconds=610, fps=1))}}
    assert "lasts 610.0 s, over the limit of 600 s" in refusal(ask(api, "local/omni", long))


@pytest.mark.parametrize(
    ("part", "mime"), [("audio_url", "audio/wav"), ("video_url", "video/mp4"), ("image_url", "image/png")]
)
def test_garbage_media_is_a_400_in_words(api, part, mime):
    garbage = {"type": part, part: {"url": data_uri(mime, b"\x00\x01garbage" * 100)}}
    message = refusal(ask(api, "local/omni", garbage))
    assert message.startswith("messages[0].content[1]: not ") and "decodable" in message and "<" not in message


async def test_parallel_requests_wait_for_the_media_pool_instead_of_decoding_all_at_once(settings, monkeypatch):
    from playground.localapi.engines import chat, media

    settings.LOCAL_API_MEDIA_WORKERS = 2
    media.pool.cache_clear()
    running, most = 0, 0
    lock = threading.Lock()
    real_decode = media.decode

    def decode(part):
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.1)
        with lock:
            running -= 1
        return real_decode(part)

    monkeypatch.setattr(media, "decode", decode)
    body = {"model": "local/vision", "messages": [{"role": "user", "content": [image(data_uri("image/png", png()))]}]}
    try:
        prepared = await asyncio.gather(*(chat.prepare(body) for _ in range(8)))
    finally:
        media.pool().shutdown()
        media.pool.cache_clear()
    assert most == 2
    assert all(p.request.messages[0].media[0].info["width"] == 40 for p in prepared)
