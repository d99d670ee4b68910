"""Alice's voices, files and batches on her Local connection are hers: Bob, with his own Local connection and
key, sees none of them and can delete none of them, through the pages or the local API (over real HTTP)."""

import re
import time

import httpx
import pytest
from django.core.management import call_command

from playground.batches.models import Batch
from playground.connections.models import Connection
from tests.factories import wav

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]
HTMX = {"HX-Request": "true"}


def local_of(user) -> Connection:
    return Connection.objects.get(owner=user, is_local=True)


def api_for(live_server, user) -> httpx.Client:
    """The local API as the user's Local connection calls it, with the user's own key."""
    key = local_of(user).get_key()
    return httpx.Client(base_url=live_server.api_url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


@pytest.fixture
def seeded(transactional_db):
    call_command("seed_catalog", verbosity=0)


def test_bob_neither_sees_nor_deletes_alices_voice(live_server, seeded, alice, bob, http_for):
    alice_http, bob_http = http_for(alice), http_for(bob)
    alice_local, bob_local = local_of(alice), local_of(bob)
    response = alice_http.post(
        "/speech/voices/upload/",
        data={"connection": alice_local.pk, "model": "local/tts", "custom_name": "alices-voice", "text": "Hello."},
        files={"audio": ("sample.wav", wav(0.5, tone=True), "audio/wav")},
    )
    assert response.status_code == 302
    uri = re.search(r'data-uri="(speech:alices-voice:[^"]+)"', alice_http.get(response.headers["location"]).text)[1]

    bobs_page = bob_http.get("/speech/voices/", params={"connection": bob_local.pk}).text
    assert "alices-voice" not in bobs_page and uri not in bobs_page
    assert len(re.findall(r'data-uri="speech:', bobs_page)) == 3  # Bob's own seeded voices only
    refused = bob_http.post("/speech/voices/delete/", data={"connection": bob_local.pk, "uri": uri})
    assert refused.status_code == 200 and "no voice" in refused.text

    with api_for(live_server, bob) as bob_api:
        assert uri not in [v["uri"] for v in bob_api.get("/audio/voice/list").json()["results"]]
        assert bob_api.post("/audio/voice/deletions", json={"uri": uri}).status_code == 400
        speech = {"model": "local/tts", "input": "hi", "voice": uri, "stream": False}
        assert bob_api.post("/audio/speech", json=speech).status_code == 400
        # The predefined voices are everyone's.
        preset = bob_api.post("/audio/speech", json={**speech, "voice": "local/tts:alex"})
        assert preset.status_code == 200, preset.text
    assert uri in alice_http.get("/speech/voices/", params={"connection": alice_local.pk}).text


def test_bob_neither_sees_nor_touches_alices_files_and_batches(live_server, seeded, alice, bob, http_for):
    alice_http, bob_http = http_for(alice), http_for(bob)
    data = {
        "connection": str(local_of(alice).pk),
        "source": "prompts",
        "model": "local/chat",
        "prompts": "Say hello.",
        "completion_window": "24h",
        "metadata_key": ["project"],
        "metadata_value": ["alices-project"],
    }
    assert "created with 1 request." in alice_http.post("/batches/new/", data=data, headers=HTMX).text
    batch = Batch.objects.get(owner=alice)

    assert batch.remote_id not in bob_http.get("/batches/").text
    assert "alices-project" not in bob_http.get("/batches/").text
    assert bob_http.get(f"/batches/{batch.pk}/results/").status_code == 404

    with api_for(live_server, alice) as alice_api, api_for(live_server, bob) as bob_api:
        remote = alice_api.get(f"/batches/{batch.remote_id}").json()
        input_id = remote["input_file_id"]
        assert input_id in [f["id"] for f in alice_api.get("/files").json()["data"]]

        assert input_id not in [f["id"] for f in bob_api.get("/files").json()["data"]]
        assert batch.remote_id not in [b["id"] for b in bob_api.get("/batches").json()["data"]]
        for path in (f"/files/{input_id}", f"/files/{input_id}/content", f"/batches/{batch.remote_id}"):
            assert bob_api.get(path).status_code == 404, path
        assert bob_api.post(f"/batches/{batch.remote_id}/cancel").status_code == 404
        # A batch made with Bob's key reads only Bob's files.
        stolen = bob_api.post(
            "/batches",
            json={"input_file_id": input_id, "endpoint": "/v1/chat/completions", "completion_window": "24h"},
        )
        assert stolen.status_code == 400 and input_id in stolen.json()["message"]

        deadline = time.monotonic() + 60
        while (done := alice_api.get(f"/batches/{batch.remote_id}").json())["status"] != "completed":
            assert time.monotonic() < deadline, done
            time.sleep(0.3)
        output_id = done["output_file_id"]
        assert alice_api.get(f"/files/{output_id}/content").status_code == 200
        assert bob_api.get(f"/files/{output_id}/content").status_code == 404


def test_the_debug_stream_list_shows_a_key_only_its_own_streams(live_server, seeded, alice, bob):
    with api_for(live_server, alice) as alice_api, api_for(live_server, bob) as bob_api:
        body = {"model": "local/chat", "messages": [{"role": "user", "content": "hello"}], "stream": True}
        with alice_api.stream("POST", "/chat/completions", json=body) as response:
            trace_id = response.headers["x-service-trace-id"]
            response.read()
        assert trace_id in [r["trace_id"] for r in alice_api.get("/debug/streams").json()["recent"]]
        listed = bob_api.get("/debug/streams").json()
        assert trace_id not in [r["trace_id"] for r in listed["recent"]]
        assert all("owner" not in r for r in alice_api.get("/debug/streams").json()["recent"])
