"""GET /models and the debug endpoint's auth."""

import httpx


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
