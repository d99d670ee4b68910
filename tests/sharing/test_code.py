"""View code: the generated curl, Python and JavaScript snippets run against the local API and succeed."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse

from playground.batches.sharing import batch_snippets
from playground.chat import services as chat_services
from playground.chat.models import Conversation
from playground.chat.sharing.snippets import chat as chat_snippets
from playground.connections.models import ensure_local_connection
from playground.rerank.sharing import rerank_snippets
from playground.sharing import snippets
from playground.speech.sharing import speech_snippets, voice_upload_snippets
from tests.factories import add_connection, wav

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]
RUNNERS = {"shell": ["bash"], "python": [sys.executable], "javascript": ["node"]}
SUFFIX = {"shell": ".sh", "python": ".py", "javascript": ".mjs"}


def run(snippet, live_server, workdir: Path) -> str:
    path = workdir / f"snippet{SUFFIX[snippet.language]}"
    path.write_text(snippet.code)
    env = {**os.environ, snippets.KEY_VARIABLE: live_server.api_key}
    done = subprocess.run(
        [*RUNNERS[snippet.language], str(path)], cwd=workdir, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{snippet.label} failed:\n{snippet.code}\n--- stderr\n{done.stderr}\n{done.stdout}"
    return done.stdout


@pytest.fixture
def chat_body(alice, catalog):
    conversation = Conversation.objects.create(
        owner=alice,
        connection=ensure_local_connection(alice),
        model_id="local/chat",
        system_prompt="Answer briefly.",
        params={"temperature": 0.2, "max_tokens": 40, "top_k": 20, "stream": True},
    )
    return chat_services.preview_request(conversation, "Say hello").body


def test_chat_snippets_run_streamed_and_not(live_server, chat_body, tmp_path):
    generated = chat_snippets(live_server.api_url, chat_body)
    assert {s.label for s in generated} == {
        "curl",
        "curl (streaming)",
        "Python",
        "Python (streaming)",
        "JavaScript",
        "JavaScript (streaming)",
    }
    python = next(s for s in generated if s.label == "Python").code
    assert "extra_body={'top_k': 20}" in python and live_server.api_key not in python
    for snippet in generated:
        output = run(snippet, live_server, tmp_path)
        if snippet.label == "curl":
            assert json.loads(output)["choices"][0]["message"]["content"]
        elif snippet.label == "curl (streaming)":
            assert output.strip().endswith("data: [DONE]") and "chat.completion.chunk" in output
        else:
            assert len(output.strip()) > 10, f"{snippet.label} printed nothing: {output!r}"


def test_rerank_snippets_run(live_server, tmp_path):
    body = {"model": "local/reranker", "query": "tides", "documents": ["the moon and tides", "bread"], "top_n": 2}
    for snippet in rerank_snippets(live_server.api_url, body):
        output = run(snippet, live_server, tmp_path)
        assert "relevance_score" in output if snippet.language == "shell" else output.split()[0] == "0"


def test_speech_snippets_save_the_audio(live_server, tmp_path):
    body = {"model": "local/tts", "input": "[S1] Hi.", "response_format": "wav", "sample_rate": 16000}
    for snippet in speech_snippets(live_server.api_url, body):
        run(snippet, live_server, tmp_path)
        audio = tmp_path / "speech.wav"
        assert audio.read_bytes()[:4] == b"RIFF" and audio.stat().st_size > 1000, snippet.label
        audio.unlink()


def test_voice_upload_snippets_create_voices(live_server, tmp_path):
    (tmp_path / "voice.wav").write_bytes(wav(1.0, tone=True))
    generated = voice_upload_snippets(live_server.api_url, model="local/tts", custom_name="myvoice", text="Hello.")
    for snippet in generated:
        assert "speech:myvoice" in run(snippet, live_server, tmp_path)


def test_batch_snippets_upload_and_create(live_server, tmp_path):
    line = {"custom_id": "r1", "method": "POST", "url": "/v1/chat/completions"}
    line["body"] = {"model": "local/chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 20}
    (tmp_path / "requests.jsonl").write_text(json.dumps(line) + "\n")
    generated = batch_snippets(live_server.api_url, filename="requests.jsonl", metadata={"team": "docs"})
    for snippet in generated:
        output = run(snippet, live_server, tmp_path)
        assert "in_queue" in output or "validating" in output or "in_progress" in output, output


def test_the_code_page_shows_every_language_and_fills_in_only_the_owners_local_key(alice_client, alice, catalog):
    conversation = Conversation.objects.create(
        owner=alice, connection=ensure_local_connection(alice), model_id="local/chat"
    )
    page = alice_client.get(reverse("sharing:code", args=["conversation", conversation.pk])).content.decode()
    assert "http://testserver/local/v1/chat/completions" in page
    assert "Python (streaming)" in page and "JavaScript" in page and "$PLAYGROUND_API_KEY" in page
    # Her own Local key, so that the code runs as shown; a provider's key never.
    assert f"export PLAYGROUND_API_KEY={conversation.connection.get_key()}" in page
    hosted = add_connection(alice)
    conversation.connection = hosted
    conversation.save()
    page = alice_client.get(reverse("sharing:code", args=["conversation", conversation.pk])).content.decode()
    assert hosted.get_key() not in page and "export PLAYGROUND_API_KEY=…" in page


def test_the_code_page_of_another_users_source_is_404(bob_client, alice, catalog):
    conversation = Conversation.objects.create(owner=alice, connection=ensure_local_connection(alice))
    assert bob_client.get(reverse("sharing:code", args=["conversation", conversation.pk])).status_code == 404
