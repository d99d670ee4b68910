"""POST /rerank over real HTTP: validation per model capability, BM25 ranking, chunking and the response shape."""

import time

import httpx
import pytest

DOCS = [
    "The stock market fell sharply on Monday.",
    "Cats are small domesticated felines that make lovely pets.",
    "Many people keep cats and dogs as pets at home.",
]


def post(live_server, body, **headers):
    return httpx.post(
        f"{live_server.api_url}/rerank",
        json=body,
        headers={"Authorization": f"Bearer {live_server.api_key}", **headers},
        timeout=30,
    )


def rerank(live_server, **body):
    response = post(live_server, {"model": "local/reranker", "query": "felines cats pets", "documents": DOCS, **body})
    assert response.status_code == 200, response.text
    return response


def assert_400(response, code, *words):
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == code
    assert body["data"] is None
    for word in words:
        assert word in body["message"]


def test_results_are_sorted_by_relevance_and_carry_meta_and_a_trace_id(live_server):
    response = rerank(live_server)
    body = response.json()
    assert [r["index"] for r in body["results"]] == [1, 2, 0]
    scores = [r["relevance_score"] for r in body["results"]]
    assert scores == sorted(scores, reverse=True)
    assert all(0 < s < 1 for s in scores)
    assert scores[0] > scores[2]
    assert all("document" not in r for r in body["results"])
    assert body["meta"]["tokens"]["output_tokens"] == 0
    assert body["meta"]["tokens"]["image_tokens"] == 0
    assert body["meta"]["tokens"]["input_tokens"] > 20
    assert body["meta"]["billed_units"] == {
        "input_tokens": body["meta"]["tokens"]["input_tokens"],
        "output_tokens": 0,
        "image_tokens": 0,
        "search_units": 1,
        "classifications": 0,
    }
    assert response.headers["x-service-trace-id"]
    assert body["id"] != rerank(live_server).json()["id"]


def test_return_documents_adds_the_input_text_to_each_result(live_server):
    results = rerank(live_server, return_documents=True).json()["results"]
    assert [r["document"] for r in results] == [{"text": DOCS[1]}, {"text": DOCS[2]}, {"text": DOCS[0]}]


def test_top_n_returns_only_the_most_relevant_documents(live_server):
    results = rerank(live_server, top_n=1).json()["results"]
    assert [r["index"] for r in results] == [1]
    assert len(rerank(live_server, top_n=10).json()["results"]) == 3


def test_a_single_string_is_one_document(live_server):
    response = post(live_server, {"model": "local/reranker", "query": "cats", "documents": "cats purr"})
    assert [r["index"] for r in response.json()["results"]] == [0]


def test_documents_with_equal_scores_keep_their_input_order(live_server):
    body = {"model": "local/reranker-lite", "query": "zebra", "documents": ["a b", "c d", "e f"]}
    assert [r["index"] for r in post(live_server, body).json()["results"]] == [0, 1, 2]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": None}, "query"),
        ({"documents": []}, "documents"),
        ({"documents": None}, "documents"),
        ({"top_n": 0}, "top_n"),
        ({"top_n": "2"}, "top_n"),
        ({"max_chunks_per_doc": 0}, "max_chunks_per_doc"),
        ({"overlap_tokens": 81}, "overlap_tokens"),
        ({"overlap_tokens": -1}, "overlap_tokens"),
        ({"return_documents": "yes"}, "return_documents"),
    ],
)
def test_out_of_bounds_values_are_400_naming_the_field(live_server, change, field):
    body = {"model": "local/reranker", "query": "cats", "documents": DOCS, **change}
    assert_400(post(live_server, body), 20015, f"{field}:")


def test_overlap_bounds_are_inclusive(live_server):
    for overlap in (0, 80):
        assert rerank(live_server, overlap_tokens=overlap, max_chunks_per_doc=1).status_code == 200


def test_multimodal_documents_are_refused_with_a_clear_message(live_server):
    body = {"model": "local/reranker", "query": "cats", "documents": ["text", {"image": "https://x/y.png"}]}
    assert_400(post(live_server, body), 20015, "documents[1]", "multimodal")


def test_instruction_is_only_for_the_instruct_model(live_server):
    for model in ("local/reranker", "local/reranker-lite"):
        body = {"model": model, "query": "pets", "documents": DOCS, "instruction": "Find cats"}
        assert_400(post(live_server, body), 20016, "instruction", model)
    body = {"model": "local/reranker-instruct", "query": "pets", "documents": DOCS, "instruction": ""}
    assert_400(post(live_server, body), 20015, "instruction")


def test_the_instruction_steers_the_ranking(live_server):
    documents = ["Dogs are loyal pets.", "Cats are independent pets."]
    body = {"model": "local/reranker-instruct", "query": "pets", "documents": documents}
    plain = post(live_server, body).json()["results"]
    steered = post(live_server, {**body, "instruction": "Prefer cats"}).json()["results"]
    assert plain[0]["relevance_score"] == plain[1]["relevance_score"]
    assert steered[0]["index"] == 1
    assert steered[0]["relevance_score"] > steered[1]["relevance_score"]


def test_chunking_parameters_are_refused_by_the_lite_model(live_server):
    for name, value in (("max_chunks_per_doc", 4), ("overlap_tokens", 10)):
        body = {"model": "local/reranker-lite", "query": "cats", "documents": DOCS, name: value}
        assert_400(post(live_server, body), 20016, name, "local/reranker-lite")


def test_unknown_or_non_rerank_models_are_20012(live_server):
    for model in ("local/nope", "local/chat", "local/tts"):
        assert_400(post(live_server, {"model": model, "query": "q", "documents": ["d"]}), 20012, "model")


def test_a_deep_relevant_passage_wins_through_its_best_chunk(live_server):
    filler = " ".join(f"Paragraph {i} talks about the weather, clouds and rain in the valley." for i in range(150))
    long_document = f"{filler} The capital of France is Paris, on the Seine. {filler}"
    documents = ["France is a country with many cities.", long_document]
    body = {"model": "local/reranker", "query": "capital of France Paris", "documents": documents}
    assert [r["index"] for r in post(live_server, body).json()["results"]] == [1, 0]
    # Scoring only the first chunk misses the passage, and so does the lite model (one truncated window).
    assert [r["index"] for r in post(live_server, {**body, "max_chunks_per_doc": 1}).json()["results"]] == [0, 1]
    lite = post(live_server, {**body, "model": "local/reranker-lite"}).json()["results"]
    assert [r["index"] for r in lite] == [0, 1]


def test_thousands_of_documents_are_ranked_quickly(live_server):
    documents = [f"Document {i} is about topic {i % 97} and subject {i % 13}." for i in range(4000)]
    documents[2500] = "The needle: a rare haystack needle found here."
    started = time.monotonic()
    response = post(
        live_server, {"model": "local/reranker", "query": "haystack needle", "documents": documents, "top_n": 3}
    )
    elapsed = time.monotonic() - started
    assert response.json()["results"][0]["index"] == 2500
    assert elapsed < 5


def test_a_wrong_key_is_401_plain_text(live_server):
    response = httpx.post(
        f"{live_server.api_url}/rerank",
        json={"model": "local/reranker", "query": "q", "documents": ["d"]},
        headers={"Authorization": "Bearer wrong"},
    )
    assert response.status_code == 401
    assert response.headers["content-type"].startswith("text/plain")


def test_status_faults_are_honoured(live_server):
    response = post(
        live_server, {"model": "local/reranker", "query": "q", "documents": ["d"]}, **{"X-Local-Fault": "503"}
    )
    assert response.status_code == 503
    assert response.json()["code"] == 50505


def test_the_three_rerankers_score_differently_and_deterministically(live_server):
    late = " ".join(f"word{i}" for i in range(80)) + " cat food for cats"
    documents = [
        "Cat food: the best food for cats, cat food reviews and cat food prices for every cat owner.",
        "Cats.",
        late,
        "Dogs eat dog food.",
    ]
    body = {"query": "cat food for cats", "documents": documents}
    scores = {}
    for model in ("local/reranker", "local/reranker-instruct", "local/reranker-lite"):
        results = post(live_server, {**body, "model": model}).json()["results"]
        assert post(live_server, {**body, "model": model}).json()["results"] == results  # deterministic
        assert all(0 <= r["relevance_score"] <= 1 for r in results)
        scores[model] = {r["index"]: r["relevance_score"] for r in results}
    assert scores["local/reranker"] != scores["local/reranker-instruct"] != scores["local/reranker-lite"]
    assert scores["local/reranker"] != scores["local/reranker-lite"]
    # The lite model reads only the first 64 tokens: the late match is no match for it, unlike the others.
    assert scores["local/reranker-lite"][2] < scores["local/reranker-lite"][3]
    assert scores["local/reranker"][2] > scores["local/reranker"][3]


def test_query_terms_named_in_the_instruction_count_more(live_server):
    body = {"model": "local/reranker-instruct", "query": "cat food", "documents": ["Food for dogs.", "A cat sleeps."]}
    plain = post(live_server, body).json()["results"]
    assert plain[0]["relevance_score"] == plain[1]["relevance_score"]
    steered = post(live_server, {**body, "instruction": "Answers about a cat"}).json()["results"]
    assert steered[0]["index"] == 1 and steered[0]["relevance_score"] > steered[1]["relevance_score"]
