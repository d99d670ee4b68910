"""Bad input is a 4xx that names the field and the limit, never a 500 (local API: JSON; pages: words)."""

import html
import io
import json

import httpx
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from playground.chat.models import Conversation
from playground.connections.models import Connection
from playground.lib.downloads import parse_range
from playground.speech.forms import VoiceUploadForm
from tests.fakeprovider.audio import wav_tone as tone

pytestmark = pytest.mark.django_db


def api(live_server, path, **kwargs):
    headers = {"Authorization": f"Bearer {live_server.api_key}", **kwargs.pop("headers", {})}
    return httpx.post(f"{live_server.api_url}/{path}", headers=headers, timeout=120, **kwargs)


def test_a_range_header_with_thousands_of_digits_is_ignored():
    assert parse_range("bytes=" + "9" * 5000 + "-", 100) is None
    assert parse_range("bytes=0-" + "9" * 5000, 100) is None
    assert parse_range("bytes=10-19", 100) == (10, 19)


@pytest.mark.needs_local_api
def test_a_download_with_a_huge_range_serves_the_whole_file(alice_client, alice):
    from playground.speech.models import SpeechClip

    connection = Connection.objects.get(owner=alice, is_local=True)
    clip = SpeechClip.objects.create(
        owner=alice, connection=connection, model="local/tts", text="hi", voice="local/tts:alex", status="complete"
    )
    clip.file = f"speech/test-{clip.pk}.mp3"
    clip.path.parent.mkdir(parents=True, exist_ok=True)
    clip.path.write_bytes(b"ID3" + b"\x00" * 97)
    clip.save()
    try:
        response = alice_client.get(
            reverse("speech:download", args=[clip.pk]), headers={"Range": "bytes=" + "1" * 5000 + "-"}
        )
        assert response.status_code == 200
        assert response["Content-Length"] == "100" and "Content-Range" not in response
        head = alice_client.head(reverse("speech:download", args=[clip.pk]))
        assert head.status_code == 200 and head["Content-Length"] == "100"
    finally:
        clip.path.unlink()


@pytest.mark.needs_local_api
def test_a_deeply_nested_body_is_a_400_naming_the_depth_limit(live_server):
    response = api(live_server, "chat/completions", content=b"[" * 100_000 + b"]" * 100_000)
    assert response.status_code == 400
    assert "nested deeper than the limit of 64 levels" in response.json()["message"]


@pytest.mark.needs_local_api
def test_a_body_over_the_endpoint_limit_is_a_413_in_json(live_server):
    body = b'{"model": "local/chat", "messages": [{"role": "user", "content": "' + b"x" * (60 * 1024 * 1024) + b'"}]}'
    response = api(live_server, "chat/completions", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    error = response.json()
    assert "limit of 52,428,800 bytes (50 MB)" in error["message"] and error["code"] == 20015
    small = api(live_server, "audio/speech", content=b"{" + b" " * (3 * 1024 * 1024) + b"}")
    assert small.status_code == 413 and "(2 MB)" in small.json()["message"]


@pytest.mark.needs_local_api
@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_are_refused_naming_the_field(live_server, constant):
    body = '{"model": "local/chat", "messages": [{"role": "user", "content": "hi"}], "temperature": ' + constant + "}"
    response = api(live_server, "chat/completions", content=body.encode())
    assert response.status_code == 400
    assert response.json()["message"].startswith("temperature: must be a finite number")


@pytest.mark.needs_local_api
def test_nul_in_a_local_api_body_is_a_400_naming_the_field(live_server):
    body = {"input_file_id": "file-x", "endpoint": "/v1/chat/completions", "metadata": {"note": "a\x00b"}}
    response = api(live_server, "batches", json=body)
    assert response.status_code == 400
    assert response.json()["message"].startswith("metadata.note: NUL characters")


@pytest.mark.needs_local_api
def test_nul_in_a_voice_transcript_is_refused_and_leaves_no_file(live_server):
    voices = settings.MEDIA_ROOT / "localapi" / "voices"
    before = set(voices.rglob("*")) if voices.exists() else set()
    form = {"customName": "nul_voice", "text": "my\x00voice", "model": "local/tts"}
    response = api(live_server, "uploads/audio/voice", data=form, files={"file": ("v.wav", tone(), "audio/wav")})
    assert response.status_code == 400
    assert response.json()["message"] == "text: NUL characters (\\u0000) are not allowed"
    after = set(voices.rglob("*")) if voices.exists() else set()
    assert after == before


@pytest.mark.needs_local_api
def test_nul_in_the_search_query_is_not_an_error(alice_client, alice):
    Conversation.objects.create(
        owner=alice, connection=Connection.objects.get(owner=alice, is_local=True), title="rivers"
    )
    response = alice_client.get(reverse("chat:search"), {"q": "riv\x00ers"})
    assert response.status_code == 200 and "rivers" in response.content.decode()
    assert alice_client.get(reverse("chat:index"), {"q": "\x00"}).status_code == 200


@pytest.mark.needs_local_api
def test_nul_in_the_tools_json_is_a_form_error(alice_client, alice):
    conversation = Conversation.objects.create(
        owner=alice, connection=Connection.objects.get(owner=alice, is_local=True), model_id="local/tools"
    )
    tools = [{"type": "function", "function": {"name": "f", "description": "a\x00b"}}]
    response = alice_client.post(
        reverse("chat:settings", args=[conversation.pk]), {"tools": json.dumps(tools)}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    assert "tools[0].function.description: NUL characters" in html.unescape(response.content.decode())


@pytest.mark.needs_local_api
@pytest.mark.parametrize("value", ["NaN", "inf", "-Infinity"])
def test_a_non_finite_temperature_is_a_form_error_naming_the_field(alice_client, alice, value):
    conversation = Conversation.objects.create(
        owner=alice, connection=Connection.objects.get(owner=alice, is_local=True), model_id="local/chat"
    )
    response = alice_client.post(
        reverse("chat:settings", args=[conversation.pk]), {"temperature": value}, headers={"HX-Request": "true"}
    )
    assert "temperature: enter a valid value" in html.unescape(response.content.decode())
    conversation.refresh_from_db()
    assert "temperature" not in conversation.params


def test_a_voice_upload_that_is_not_audio_is_refused():
    fake = SimpleUploadedFile("me.wav", b"RIFF" + b"\x00" * 2000, content_type="audio/wav")
    form = VoiceUploadForm({"custom_name": "me", "text": "hello"}, {"audio": fake})
    assert not form.is_valid()
    assert "me.wav is not an audio recording" in form.errors["audio"][0]
    real = SimpleUploadedFile("me.mp3", tone(), content_type="audio/mpeg")
    form = VoiceUploadForm({"custom_name": "me", "text": "hello"}, {"audio": real})
    assert form.is_valid(), form.errors


def test_chat_audio_and_video_attachments_are_probed():
    from playground.catalog.models import CatalogModel
    from playground.chat.forms import clean_attachments

    model = CatalogModel.objects.get(model_id="local/omni")
    fake_video = SimpleUploadedFile("clip.mp4", b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 500, content_type="video/mp4")
    fake_audio = SimpleUploadedFile("song.mp3", io.BytesIO(b"not audio at all " * 50).read(), "audio/mpeg")
    with pytest.raises(Exception) as caught:
        clean_attachments([fake_video, fake_audio], model)
    messages = " ".join(caught.value.messages)
    assert "clip.mp4 is not video of an accepted type" in messages
    assert "song.mp3 is not audio of an accepted type" in messages
    good = SimpleUploadedFile("tone.mp3", tone(), "audio/mpeg")
    [upload] = clean_attachments([good], model)
    assert upload.content_type == "audio/wav"


@pytest.mark.parametrize(("name", "data"), [("docs.txt", b"one\x00two\n"), ("docs.jsonl", b'{"text": "a\\u0000b"}\n')])
def test_nul_in_uploaded_rerank_documents_is_refused(name, data):
    from playground.rerank.documents import DocumentsError, parse_upload

    with pytest.raises(DocumentsError, match=r"documents: NUL characters \(\\u0000\) are not allowed"):
        parse_upload(name, data)
