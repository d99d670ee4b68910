"""Rerank and speech through the playground's pages against each provider, over real HTTP."""

import io
import re

import av
import pytest

from playground.rerank.models import RerankRun
from playground.speech.models import SpeechClip
from tests.speech.clips import wait_until_finished

pytestmark = pytest.mark.django_db(transaction=True)

DOCUMENTS = [
    "Bananas are rich in potassium.",
    "Paris is the capital of France.",
    "Quantum computers use qubits.",
]


def test_rerank_ranks_the_documents_and_shows_them(provider, alice_http):
    response = alice_http.post(
        "/rerank/run/",
        data={
            "connection": provider.connection.pk,
            "model": provider.rerank_model,
            "query": "capital of France",
            "documents": "\n".join(DOCUMENTS),
            "documents_format": "lines",
            "top_n": "2",
        },
    )
    assert response.status_code == 302, response.text[:3000]
    run = RerankRun.objects.get(owner=provider.connection.owner)
    assert run.connection == provider.connection and run.model == provider.rerank_model and run.trace_id
    assert run.results[0]["index"] == 1 and len(run.results) == 2
    page = alice_http.get(response.headers["location"]).text
    rows = re.findall(r'data-index="(\d+)" data-score="([\d.]+)"', page)
    assert [int(index) for index, _ in rows] == [item["index"] for item in run.results]
    assert "Paris is the capital of France." in page
    if provider.fake:
        assert provider.fake.state.bodies("/rerank")[-1]["top_n"] == 2


def test_a_speech_clip_is_saved_and_playable(provider, alice_http):
    response = alice_http.post(
        "/speech/clips/",
        data={
            "connection": provider.connection.pk,
            "model": provider.speech_model,
            "input": "[S1] Hello there. [S2] Hi!",
            "voice": provider.voice,
            "response_format": "mp3",
            "sample_rate": "44100",
            "speed": "1",
            "gain": "0",
            "stream": "on",
        },
    )
    assert response.status_code == 302, response.text[:3000]
    pk = int(re.search(r"/speech/clips/(\d+)/", response.headers["location"]).group(1))
    streamed = alice_http.get(f"/speech/clips/{pk}/stream/")
    assert streamed.status_code == 200 and streamed.headers["content-type"] == "audio/mpeg"
    clip = wait_until_finished(SpeechClip.objects.get(pk=pk))
    assert clip.status == "complete" and clip.connection == provider.connection
    saved = clip.path.read_bytes()
    assert streamed.content == saved and clip.bytes == len(saved)
    with av.open(io.BytesIO(saved)) as container:
        assert container.format.name == "mp3"
        seconds = sum(frame.samples for frame in container.decode(audio=0)) / 44100
    assert seconds > 0.5
    page = alice_http.get(response.headers["location"]).text
    assert f"/speech/clips/{pk}/" in page and "<audio" in page
    download = alice_http.get(f"/speech/clips/{pk}/download/")
    assert download.status_code == 200 and download.content == saved


def test_a_provider_without_custom_voices_gets_no_warning(provider, alice_http):
    page = alice_http.get("/speech/", params={"connection": provider.connection.pk, "model": provider.speech_model})
    assert page.status_code == 200
    assert "could not be loaded" not in page.text and provider.voice in page.text
