"""Reference voices over real HTTP: the seeded list, upload, use in speech, deletion, and isolation per key."""

import re

import httpx
import pytest

from playground.localapi.keys import digest
from playground.localapi.models import Voice
from tests.fakeprovider.audio import wav_tone as tone

pytestmark = pytest.mark.django_db(transaction=True)
URI = re.compile(r"speech:([a-zA-Z0-9_-]{1,64}):[0-9a-f]{12}:[0-9a-f]{16}")


def auth(live_server):
    return {"Authorization": f"Bearer {live_server.api_key}"}


def voices(live_server):
    response = httpx.get(f"{live_server.api_url}/audio/voice/list", headers=auth(live_server))
    assert response.status_code == 200
    assert response.headers["x-service-trace-id"]
    return response.json()["results"]


def upload(live_server, data=None, filename="me.wav", **fields):
    form = {"customName": "my-voice_1", "text": "This is my voice.", "model": "local/tts", **fields}
    files = {"file": (filename, tone() if data is None else data, "audio/wav")}
    return httpx.post(f"{live_server.api_url}/uploads/audio/voice", data=form, files=files, headers=auth(live_server))


def delete(live_server, uri):
    return httpx.post(f"{live_server.api_url}/audio/voice/deletions", json={"uri": uri}, headers=auth(live_server))


def speak(live_server, voice):
    return httpx.post(
        f"{live_server.api_url}/audio/speech",
        json={"model": "local/tts", "input": "Hi there.", "voice": voice, "stream": False, "response_format": "wav"},
        headers=auth(live_server),
        timeout=30,
    )


def test_a_key_starts_with_a_few_voices(live_server):
    results = voices(live_server)
    assert [v["customName"] for v in results] == ["narrator", "host", "guest"]
    for voice in results:
        assert voice["model"] == "local/tts"
        assert voice["text"]
        match = URI.fullmatch(voice["uri"])
        assert match and match.group(1) == voice["customName"]
    assert voices(live_server) == results  # seeded once


def test_an_uploaded_voice_is_listed_usable_and_deletable(live_server):
    response = upload(live_server)
    assert response.status_code == 200, response.text
    created = response.json()
    assert URI.fullmatch(created["uri"])
    assert created["customName"] == "my-voice_1"
    assert created["uri"].endswith(created["id"])
    listed = [v for v in voices(live_server) if v["uri"] == created["uri"]]
    assert listed == [
        {"model": "local/tts", "customName": "my-voice_1", "text": "This is my voice.", "uri": created["uri"]}
    ]
    assert Voice.objects.get(uri=created["uri"]).audio.read() == tone()

    spoken = speak(live_server, created["uri"])
    assert spoken.status_code == 200
    assert spoken.content[:4] == b"RIFF"

    assert delete(live_server, created["uri"]).json() == {"uri": created["uri"], "deleted": True}
    assert created["uri"] not in [v["uri"] for v in voices(live_server)]
    assert speak(live_server, created["uri"]).status_code == 400
    again = delete(live_server, created["uri"])
    assert again.status_code == 400
    assert again.json()["message"].startswith("uri:")


def test_a_custom_voice_can_be_a_reference(live_server):
    uri = upload(live_server).json()["uri"]
    response = httpx.post(
        f"{live_server.api_url}/audio/speech",
        json={
            "model": "local/tts",
            "input": "[S1] Hello. [S2] Hi.",
            "references": [{"audio": uri, "text": "This is my voice."}, {"audio": "local/tts:anna", "text": "Hi"}],
            "response_format": "pcm",
            "stream": False,
        },
        headers=auth(live_server),
    )
    assert response.status_code == 200
    assert len(response.content) > 8000


def test_deleted_seed_voices_do_not_come_back(live_server):
    first = voices(live_server)[0]
    assert delete(live_server, first["uri"]).status_code == 200
    assert first["uri"] not in [v["uri"] for v in voices(live_server)]
    assert len(voices(live_server)) == 2


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"customName": "has space"}, "customName"),
        ({"customName": "x" * 65}, "customName"),
        ({"customName": ""}, "customName"),
        ({"text": ""}, "text"),
        ({"model": "local/chat"}, "model"),
    ],
)
def test_upload_fields_are_validated(live_server, fields, field):
    response = upload(live_server, **fields)
    assert response.status_code == 400
    assert response.json()["message"].startswith(f"{field}:")


def test_a_file_that_is_not_audio_is_refused(live_server):
    response = upload(live_server, data=b"this is not audio at all" * 100, filename="notes.txt")
    assert response.status_code == 400
    assert response.json()["message"].startswith("file:")


def test_a_recording_longer_than_30_seconds_is_refused(live_server):
    response = upload(live_server, data=tone(31, rate=8000))
    assert response.status_code == 400
    assert "30 seconds" in response.json()["message"]


def test_voices_of_another_key_are_invisible_and_untouchable(live_server):
    other = Voice.objects.create(
        owner=digest("sk-someone-else"),
        model="local/tts",
        custom_name="secret",
        text="Not yours.",
        uri="speech:secret:aaaaaaaaaaaa:0123456789abcdef",
    )
    assert other.uri not in [v["uri"] for v in voices(live_server)]
    assert speak(live_server, other.uri).status_code == 400
    assert delete(live_server, other.uri).status_code == 400
    other.refresh_from_db()
    assert not other.deleted


def test_listing_needs_a_valid_key(live_server):
    response = httpx.get(f"{live_server.api_url}/audio/voice/list", headers={"Authorization": "Bearer nope"})
    assert response.status_code == 401
