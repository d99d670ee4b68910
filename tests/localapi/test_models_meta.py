"""GET /models, the debug endpoint's auth, and the key command."""

import httpx
import pytest
from django.core.management import call_command

from playground.localapi import keys


def test_models_lists_every_family_in_openai_shape(api):
    response = api.get("/models")
    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "list"
    ids = {m["id"] for m in body["data"]}
    expected = {"local/chat", "local/reasoner", "local/reasoner-effort", "local/minp", "local/tools", "local/vision"}
    expected |= {"local/omni", "local/ocr", "local/vision-b64", "local/verified", "local/reranker", "local/tts"}
    assert expected <= ids
    for model in body["data"]:
        assert model["object"] == "model"
        assert model["owned_by"] == "local"
        assert model["kind"] in ("chat", "rerank", "speech")
        assert isinstance(model["capabilities"], dict)
        assert isinstance(model["context_window"], int)
    reasoner = next(m for m in body["data"] if m["id"] == "local/reasoner")
    assert "thinking_budget" in reasoner["capabilities"]["params"]


def test_models_and_debug_need_a_key(live_server):
    for path in ("/models", "/debug/streams"):
        assert httpx.get(live_server.api_url + path).status_code == 401


@pytest.mark.django_db
def test_localapi_key_prints_a_generated_key_that_is_then_valid(settings, capsys):
    settings.LOCAL_API_KEYS = []
    keys._generated.clear()
    call_command("localapi_key")
    key = capsys.readouterr().out.strip()
    assert key.startswith("sk-local-")
    assert keys.is_valid(key)
    assert not keys.is_valid(key + "x")
    keys._generated.clear()


def test_localapi_key_prints_the_configured_key(settings, capsys):
    settings.LOCAL_API_KEYS = ["sk-configured"]
    call_command("localapi_key")
    assert capsys.readouterr().out.strip() == "sk-configured"
