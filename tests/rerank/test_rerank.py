"""The rerank page against the local API over real HTTP (the live daphne server)."""

import json
import re

import pytest
from django.urls import reverse

from playground.catalog.services import add_by_hand
from playground.connections.models import Connection
from playground.rerank import documents as docs
from playground.rerank.models import RerankRun

pytestmark = pytest.mark.django_db(transaction=True)

DOCUMENTS = [
    "The capital of France is Paris.",
    "Bananas are rich in potassium.",
    "Paris hosts the Louvre, the most visited museum in France.",
    "Quantum computers use qubits.",
]


def local(user):
    return Connection.objects.get(owner=user, is_local=True)


def post_run(client, user, **fields):
    data = {
        "connection": local(user).pk,
        "model": "local/reranker",
        "query": "Paris France",
        "documents": "\n".join(DOCUMENTS),
        "documents_format": "lines",
        **fields,
    }
    files = data.pop("files", None)
    return client.post(reverse("rerank:run"), data=data, files=files)


@pytest.mark.needs_local_api
def test_results_are_ranked_with_scores_and_the_run_is_saved(live_server, catalog, alice, alice_http):
    response = post_run(alice_http, alice)
    run = RerankRun.objects.get(owner=alice)
    assert response.status_code == 302 and response.headers["location"] == reverse("rerank:detail", args=[run.pk])
    scores = [item["relevance_score"] for item in run.results]
    assert scores == sorted(scores, reverse=True) and len(scores) == 4
    assert run.results[0]["index"] in (0, 2)
    assert run.trace_id and run.meta["tokens"]["input_tokens"] > 0
    page = alice_http.get(response.headers["location"]).text
    rows = re.findall(r'data-index="(\d+)" data-score="([\d.]+)"', page)
    assert [int(index) for index, _ in rows] == [item["index"] for item in run.results]
    # The document text is shown although return_documents was false (the playground has the inputs).
    assert "Bananas are rich in potassium." in page
    assert run.trace_id in page


@pytest.mark.needs_local_api
def test_top_n_and_return_documents_reach_the_upstream(live_server, catalog, alice, alice_http):
    post_run(alice_http, alice, top_n="2", return_documents="on")
    run = RerankRun.objects.get(owner=alice)
    assert run.params == {"top_n": 2, "return_documents": True}
    assert len(run.results) == 2
    assert all(item["document"]["text"] == DOCUMENTS[item["index"]] for item in run.results)


@pytest.mark.needs_local_api
def test_documents_are_not_returned_unless_asked(live_server, catalog, alice, alice_http):
    post_run(alice_http, alice)
    run = RerankRun.objects.get(owner=alice)
    assert run.params["return_documents"] is False
    assert all("document" not in item for item in run.results)


@pytest.mark.needs_local_api
def test_instruction_is_sent_only_to_models_that_support_it(live_server, catalog, alice, alice_http):
    post_run(alice_http, alice, model="local/reranker-instruct", instruction="museum")
    run = RerankRun.objects.get(owner=alice)
    assert run.params["instruction"] == "museum"
    # The instruction's terms count: the museum document wins.
    assert run.results[0]["index"] == 2
    post_run(alice_http, alice, model="local/reranker-lite", instruction="museum", max_chunks_per_doc="3")
    lite = RerankRun.objects.filter(owner=alice, model="local/reranker-lite").get()
    assert "instruction" not in lite.params and "max_chunks_per_doc" not in lite.params


@pytest.mark.needs_local_api
def test_chunking_parameters_are_validated_with_the_field_and_limit(live_server, catalog, alice, alice_http):
    response = post_run(alice_http, alice, overlap_tokens="81", max_chunks_per_doc="0", top_n="0")
    page = response.text
    assert response.status_code == 200
    assert "overlap_tokens: must be at most 80." in page
    assert "max_chunks_per_doc: must be at least 1." in page
    assert "top_n: must be at least 1." in page
    assert not RerankRun.objects.exists()


@pytest.mark.needs_local_api
def test_chunking_parameters_reach_the_upstream(live_server, catalog, alice, alice_http):
    long_doc = ("filler words " * 200) + "needle"
    documents = "\n".join(["needle in a short one and more", long_doc])
    post_run(alice_http, alice, documents=documents, query="needle", max_chunks_per_doc="1", overlap_tokens="5")
    run = RerankRun.objects.get(owner=alice)
    assert run.params["max_chunks_per_doc"] == 1 and run.params["overlap_tokens"] == 5
    # With one chunk per document the needle at the end of the long document is never seen.
    assert run.results[0]["index"] == 0
    assert run.results[1]["relevance_score"] < 0.2


@pytest.mark.needs_local_api
def test_the_model_change_re_renders_the_parameter_fields(live_server, catalog, alice, alice_http):
    connection = local(alice).pk
    lite = alice_http.get(reverse("rerank:fields"), params={"connection": connection, "model": "local/reranker-lite"})
    instruct = alice_http.get(
        reverse("rerank:fields"), params={"connection": connection, "model": "local/reranker-instruct"}
    )
    assert 'name="instruction"' not in lite.text and 'name="overlap_tokens"' not in lite.text
    assert 'name="instruction"' in instruct.text and 'name="overlap_tokens"' in instruct.text


@pytest.mark.needs_local_api
def test_an_uploaded_csv_with_a_text_column_is_parsed(live_server, catalog, alice, alice_http):
    csv_text = 'id,text\n1,Paris is in France\n2,"Bananas, yellow"\n'
    post_run(alice_http, alice, documents="", files={"documents_file": ("docs.csv", csv_text.encode(), "text/csv")})
    run = RerankRun.objects.get(owner=alice)
    assert run.documents == ["Paris is in France", "Bananas, yellow"]


@pytest.mark.needs_local_api
def test_upstream_errors_are_shown_in_words_with_the_next_step(live_server, catalog, alice, alice_http):
    wrong = Connection(owner=alice, name="Wrong key", base_url=live_server.api_url)
    wrong.set_key("sk-wrong")
    wrong.save()
    add_by_hand(wrong, "BAAI/bge-reranker-v2-m3")
    response = post_run(alice_http, alice, connection=wrong.pk, model="BAAI/bge-reranker-v2-m3")
    page = response.text
    assert "API key rejected" in page and "Check the API key of this connection" in page
    assert not RerankRun.objects.exists()


@pytest.mark.needs_local_api
def test_runs_can_be_compared_with_rank_changes(live_server, catalog, alice, alice_http):
    post_run(alice_http, alice, model="local/reranker-instruct", instruction="bananas potassium")
    base = RerankRun.objects.get(owner=alice)
    response = alice_http.post(reverse("rerank:compare", args=[base.pk]), data={"model": "local/reranker"})
    other = RerankRun.objects.exclude(pk=base.pk).get()
    assert other.compared_to == base and other.documents == base.documents and "instruction" not in other.params
    assert response.headers["location"] == reverse("rerank:comparison", args=[base.pk, other.pk])
    page = alice_http.get(response.headers["location"]).text
    assert "↓" in page and "↑" in page


@pytest.mark.needs_local_api
def test_another_users_run_is_a_404(live_server, catalog, alice, alice_http, bob, http_for):
    post_run(alice_http, alice)
    run = RerankRun.objects.get(owner=alice)
    client = http_for(bob)
    assert client.get(reverse("rerank:detail", args=[run.pk])).status_code == 404
    assert client.post(reverse("rerank:delete", args=[run.pk])).status_code == 404
    assert (
        client.post(reverse("rerank:compare", args=[run.pk]), data={"model": "local/reranker-lite"}).status_code == 404
    )
    assert RerankRun.objects.filter(pk=run.pk).exists()


@pytest.mark.needs_local_api
def test_a_run_can_be_reopened_and_deleted(live_server, catalog, alice, alice_http):
    post_run(alice_http, alice, top_n="3")
    run = RerankRun.objects.get(owner=alice)
    page = alice_http.get(reverse("rerank:detail", args=[run.pk])).text
    assert 'name="top_n" value="3"' in page or re.search(r'name="top_n"[^>]*value="3"', page)
    assert "Quantum computers use qubits." in page
    alice_http.post(reverse("rerank:delete", args=[run.pk]))
    assert not RerankRun.objects.exists()


@pytest.mark.parametrize(
    ("text", "fmt", "message"),
    [
        ('{"text": "a"}\nnot json\n', "jsonl", "line 2: not valid JSON"),
        ('{"text": "a"}\n{"title": "b"}\n', "jsonl", "line 2: expected a `text` or `document`"),
        ("id,text\n1,fine\n2,\n", "csv", "line 3: the text cell is empty"),
    ],
)
def test_document_errors_name_the_line(text, fmt, message):
    with pytest.raises(docs.DocumentsError, match=re.escape(message)):
        docs.parse(text, fmt)


def test_documents_parse_every_format():
    assert docs.parse("a\n\n b \n", "lines") == ["a", "b"]
    assert docs.parse("x,y\nz,w\n", "csv") == ["x", "z"]
    assert docs.parse('{"document": {"text": "d"}}\n"bare"\n{"text": "t"}\n', "jsonl") == ["d", "bare", "t"]
    many = "\n".join(json.dumps({"text": f"doc {i}"}) for i in range(5000))
    assert len(docs.parse(many, "jsonl")) == 5000
