"""Multimodal chat parts decoded from their actual bytes: images, audio, video, PDFs (spec 2.2, 2.4)."""

import base64
import io

import av
import pytest
from PIL import Image

from tests.factories import wav


def data_uri(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def png(width=40, height=20) -> bytes:
    image = Image.new("RGB", (width, height), (220, 20, 20))
    image.paste((30, 60, 220), (0, 0, width // 4, height))  # a quarter blue, the rest red
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def mp4(seconds=3, fps=10) -> bytes:
    out = io.BytesIO()
    with av.open(out, "w", format="mp4") as container:
        stream = container.add_stream("mpeg4", rate=fps)
        stream.width, stream.height, stream.pix_fmt = 32, 32, "yuv420p"
        for i in range(seconds * fps):
            frame = av.VideoFrame.from_image(Image.new("RGB", (32, 32), (i * 8 % 255, 0, 0)))
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return out.getvalue()


def pdf(text: str) -> bytes:
    """A minimal one-page PDF with a text layer, written by hand."""
    stream = f"BT /F1 18 Tf 40 100 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 200] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def ask(api, model, *parts, text="Describe this."):
    body = {"model": model, "messages": [{"role": "user", "content": [{"type": "text", "text": text}, *parts]}]}
    return api.post("/chat/completions", json=body)


def content(response) -> str:
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["message"]["content"]


def test_image_is_described_from_its_bytes(api):
    text = content(ask(api, "local/vision", {"type": "image_url", "image_url": {"url": data_uri("image/png", png())}}))
    assert "40×20 px PNG" in text
    assert "red (75%)" in text
    assert "blue (25%)" in text


def test_image_tokens_count_in_prompt_tokens(api):
    plain = ask(api, "local/vision", text="Describe this.").json()["usage"]["prompt_tokens"]
    part = {"type": "image_url", "image_url": {"url": data_uri("image/png", png())}}
    with_image = ask(api, "local/vision", part).json()["usage"]["prompt_tokens"]
    assert with_image - plain >= 85


def test_audio_duration_comes_from_the_bytes(api):
    part = {"type": "audio_url", "audio_url": {"url": data_uri("audio/wav", wav(1.5))}}
    text = content(ask(api, "local/omni", part))
    assert "1.50 s" in text
    assert "16000 Hz" in text


def test_video_frame_count_is_min_of_fps_times_length_and_max_frams(api):
    url = data_uri("video/mp4", mp4(seconds=3))
    text = content(ask(api, "local/omni", {"type": "video_url", "video_url": {"url": url, "fps": 2}}))
    assert "6 frames used" in text
    text = content(ask(api, "local/omni", {"type": "video_url", "video_url": {"url": url, "fps": 2, "max_frams": 4}}))
    assert "4 frames used" in text
    assert "32×32" in text


def test_ocr_model_extracts_the_text_of_a_pdf(api):
    url = data_uri("application/pdf", pdf("Invoice 4711 total 99 EUR"))
    text = content(ask(api, "local/ocr", {"type": "image_url", "image_url": {"url": url}}))
    assert "Invoice 4711 total 99 EUR" in text
    assert "1 page" in text


def test_ocr_model_rejects_detail(api):
    url = data_uri("application/pdf", pdf("x"))
    response = ask(api, "local/ocr", {"type": "image_url", "image_url": {"url": url, "detail": "high"}})
    assert response.status_code == 400
    assert response.json()["code"] == 20016
    assert "detail" in response.json()["message"]


def test_pdf_is_refused_by_other_models(api):
    url = data_uri("application/pdf", pdf("x"))
    response = ask(api, "local/vision", {"type": "image_url", "image_url": {"url": url}})
    assert response.status_code == 400
    assert "local/ocr" in response.json()["message"]


@pytest.mark.parametrize(
    ("model", "words"),
    [
        ("local/vision-b64", ["base64 image data only"]),
        ("local/vision", ["cannot fetch", "not in PLAYGROUND_ALLOWED_UPSTREAM_HOSTS"]),
    ],
)
def test_metadata_addresses_are_refused(api, model, words):
    part = {"type": "image_url", "image_url": {"url": "http://169.254.169.254/latest/meta-data"}}
    response = ask(api, model, part)
    assert response.status_code == 400
    for word in words:
        assert word in response.json()["message"]
    assert "messages[0].content[1].image_url.url" in response.json()["message"]


PART_ERRORS = [
    ("local/vision", [], ["messages[0].content", "at least 1"]),
    ("local/vision", [{"type": "sticker"}], ["messages[0].content[0].type"]),
    ("local/vision", [{"type": "text"}], ["messages[0].content[0].text"]),
    ("local/vision", [{"type": "image_url", "image_url": {}}], ["image_url.url"]),
    ("local/vision", [{"type": "image_url", "image_url": {"url": "data:image/png;base64,!!"}}], ["base64"]),
    ("local/vision", [{"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}], ["image"]),
    (
        "local/vision",
        [{"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8=", "detail": "ultra"}}],
        ["detail", "auto, low, high"],
    ),
    ("local/vision", [{"type": "audio_url", "audio_url": {"url": "data:audio/wav;base64,aGVsbG8="}}], ["audio_url"]),
    ("local/chat", [{"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}], ["local/chat"]),
    (
        "local/omni",
        [{"type": "video_url", "video_url": {"url": "data:video/mp4;base64,aGVsbG8=", "max_frams": 0}}],
        ["max_frams"],
    ),
]


@pytest.mark.parametrize(("model", "parts", "words"), PART_ERRORS)
def test_invalid_content_parts_get_400(api, model, parts, words):
    body = {"model": model, "messages": [{"role": "user", "content": parts}]}
    response = api.post("/chat/completions", json=body)
    assert response.status_code == 400
    for word in words:
        assert word in response.json()["message"]


def test_text_models_accept_arrays_of_text_parts(api):
    body = {"model": "local/chat", "messages": [{"role": "user", "content": [{"type": "text", "text": "what is 2+3"}]}]}
    assert "**5**" in content(api.post("/chat/completions", json=body))
