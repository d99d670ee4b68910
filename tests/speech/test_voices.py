"""The voices page: the user's custom voices at the provider (the local API over real HTTP)."""

import re

import pytest

from playground.speech.models import SpeechClip
from tests.factories import wav

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def test_voices_are_listed_with_copyable_uris_and_a_link_to_the_form(live_server, catalog, alice, alice_http):
    page = alice_http.get("/speech/voices/").text
    uris = re.findall(r'data-uri="(speech:[^"]+)"', page)
    assert len(uris) == 3  # the local API seeds three voices per key
    for uri in uris:
        assert f'data-copy="{uri}"' in page
    assert "Use in speech form" in page
    form = alice_http.get("/speech/", params={"voice": uris[0], "model": "local/tts"}).text
    assert re.search(rf'<option value="{re.escape(uris[0])}"\s+selected', form)


def test_a_voice_is_uploaded_previewed_and_deleted(live_server, catalog, alice, alice_http, local_connection):
    response = alice_http.post(
        "/speech/voices/upload/",
        data={
            "connection": local_connection.pk,
            "model": "local/tts",
            "custom_name": "my-voice",
            "text": "A short sample of my voice.",
        },
        files={"audio": ("sample.wav", wav(1.0, tone=True), "audio/wav")},
    )
    assert response.status_code == 302
    page = alice_http.get(response.headers["location"]).text
    assert "my-voice" in page and "A short sample of my voice." in page
    uri = re.search(r'data-uri="(speech:my-voice:[^"]+)"', page).group(1)

    preview = alice_http.post(
        "/speech/voices/preview/",
        data={"connection": local_connection.pk, "uri": uri, "model": "local/tts"},
        headers={"HX-Request": "true"},
    )
    assert preview.status_code == 200 and "<audio" in preview.text
    clip = SpeechClip.objects.get(voice=uri)
    assert clip.owner == alice

    alice_http.post("/speech/voices/delete/", data={"connection": local_connection.pk, "uri": uri})
    assert uri not in alice_http.get("/speech/voices/").text


def test_upload_errors_name_the_field(live_server, catalog, alice, alice_http, local_connection):
    bad_name = alice_http.post(
        "/speech/voices/upload/",
        data={"connection": local_connection.pk, "custom_name": "no spaces please", "text": "x"},
        files={"audio": ("sample.wav", wav(1.0, tone=True), "audio/wav")},
    )
    assert "customName: 1 to 64 characters" in bad_name.text
    not_audio = alice_http.post(
        "/speech/voices/upload/",
        data={"connection": local_connection.pk, "custom_name": "ok", "text": "x"},
        files={"audio": ("sample.wav", b"not audio at all", "audio/wav")},
    )
    # Probed before anything is sent upstream.
    assert "file: sample.wav is not an audio recording: not a readable audio file." in not_audio.text


def test_another_users_connection_is_a_404_on_the_voices_page(live_server, catalog, alice, bob, http_for):
    client = http_for(bob)
    alice_local = alice.connections.get(is_local=True)
    assert client.get("/speech/voices/", params={"connection": alice_local.pk}).status_code == 404
    assert client.post("/speech/voices/delete/", data={"connection": alice_local.pk, "uri": "x"}).status_code == 404
