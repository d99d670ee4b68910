"""The batches page over real HTTP: the playground's views on the live server call the local API over HTTP."""

import html
import json
import re

import httpx
import pytest

from playground.batches.models import TERMINAL, Batch
from playground.catalog.services import add_by_hand
from tests.batches.conftest import HTMX, local_connection, wait_for_status
from tests.factories import add_connection

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

PROMPTS = ["Name a colour of the sky.", "What is two plus two?", "Say hello in French."]


def form(connection, **fields) -> dict:
    return {
        "connection": str(connection.pk),
        "source": "prompts",
        "model": "local/chat",
        "prompts": "\n".join(PROMPTS),
        "system": "",
        "max_tokens": "",
        "completion_window": "24h",
        "metadata_key": [""],
        "metadata_value": [""],
        **fields,
    }


def row_of(page: str, custom_id: str) -> str:
    match = re.search(rf'<tr data-custom-id="{custom_id}">(.*?)</tr>', page, re.S)
    assert match, f"no row for {custom_id}"
    return match.group(1)


def test_a_batch_written_from_prompts_completes_and_the_results_pair_each_prompt_with_its_answer(alice_http, alice):
    connection = local_connection(alice)
    response = alice_http.post(
        "/batches/new/",
        data=form(connection, system="Be brief.", max_tokens="64", metadata_key=["project"], metadata_value=["demo"]),
        headers=HTMX,
    )
    assert response.status_code == 200
    assert "created with 3 requests" in response.text
    batch = Batch.objects.get(owner=alice)
    assert batch.remote_id.startswith("batch_") and batch.request_count == 3
    assert batch.metadata == {"project": "demo"}
    assert f'id="batch-{batch.pk}"' in response.text

    final = wait_for_status(alice_http, batch.pk, TERMINAL)
    assert 'data-status="completed"' in final
    assert "3 of 3 done" in final
    # A finished row stops polling.
    assert 'hx-trigger="every 2s"' not in final

    output = alice_http.get(f"/batches/{batch.pk}/download/output/")
    assert output.status_code == 200
    assert "attachment" in output.headers["content-disposition"]
    lines = [json.loads(raw) for raw in output.text.splitlines()]
    assert sorted(item["custom_id"] for item in lines) == ["request-1", "request-2", "request-3"]
    answers = {item["custom_id"]: item["response"]["body"]["choices"][0]["message"]["content"] for item in lines}

    page = alice_http.get(f"/batches/{batch.pk}/results/").text
    assert "3 answered" in page
    for number, prompt in enumerate(PROMPTS, start=1):
        row = html.unescape(row_of(page, f"request-{number}"))
        assert prompt in row
        assert answers[f"request-{number}"].strip()[:60] in row


def test_the_written_requests_carry_the_system_prompt_and_max_tokens(alice_http, alice, live_server):
    connection = local_connection(alice)
    alice_http.post("/batches/new/", data=form(connection, system="Be brief.", max_tokens="64"), headers=HTMX)
    batch = Batch.objects.get(owner=alice)
    sent = httpx.get(
        f"{live_server.api_url}/files/{batch.input_file_id}/content",
        headers={"Authorization": f"Bearer {connection.get_key()}"},  # the file is Alice's key's own
    )
    lines = [json.loads(raw) for raw in sent.text.splitlines()]
    assert lines[0] == {
        "custom_id": "request-1",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {
            "model": "local/chat",
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": PROMPTS[0]}],
            "max_tokens": 64,
        },
    }
    assert [line["custom_id"] for line in lines] == ["request-1", "request-2", "request-3"]
    wait_for_status(alice_http, batch.pk, TERMINAL)


def test_an_invalid_upload_is_shown_with_the_lines_at_fault(alice_http, alice):
    good = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "local/chat"}}
    good["body"]["messages"] = [{"role": "user", "content": "hi"}]
    content = "\n".join([json.dumps(good), "{not json", json.dumps({**good, "custom_id": "b", "method": "GET"})])
    data = form(local_connection(alice), source="upload")
    response = alice_http.post(
        "/batches/new/", data=data, files={"file": ("mine.jsonl", content.encode())}, headers=HTMX
    )
    assert response.status_code == 200
    page = html.unescape(response.text)
    assert "The provider rejected the requests file" in page
    items = re.findall(r"<li>(line \d+: [^<]*)</li>", page)
    assert items[0].startswith("line 2: invalid JSON")
    assert items[1] == "line 3: method must be POST"
    assert "Fix the lines listed in the file" in page
    assert not Batch.objects.filter(owner=alice).exists()


def test_an_uploaded_file_is_sent_as_it_is(alice_http, alice):
    lines = [
        {
            "custom_id": f"mine-{n}",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": "local/chat", "messages": [{"role": "user", "content": f"Count to {n}"}]},
        }
        for n in (1, 2)
    ]
    content = "".join(json.dumps(line) + "\n" for line in lines).encode()
    data = form(local_connection(alice), source="upload", model="", prompts="")
    response = alice_http.post("/batches/new/", data=data, files={"file": ("mine.jsonl", content)}, headers=HTMX)
    assert "created with 2 requests" in response.text
    batch = Batch.objects.get(owner=alice)
    assert batch.input_filename == "mine.jsonl"
    wait_for_status(alice_http, batch.pk, ("completed",))
    page = alice_http.get(f"/batches/{batch.pk}/results/").text
    assert "Count to 2" in row_of(page, "mine-2")


@pytest.mark.parametrize(
    ("keys", "values", "message"),
    [
        ([f"k{n}" for n in range(17)], ["v"] * 17, "metadata: 17 pairs; the limit is 16."),
        (["k" * 65], ["v"], "metadata: key in row 1 is 65 characters; the limit is 64."),
        (["long"], ["v" * 513], "metadata: value of 'long' is 513 characters; the limit is 512."),
        (["", "b"], ["orphan", "x"], "metadata: row 1 has a value but no key."),
    ],
)
def test_metadata_beyond_the_limits_is_refused_with_a_message_naming_the_limit(
    alice_http, alice, keys, values, message
):
    data = form(local_connection(alice), metadata_key=keys, metadata_value=values)
    response = alice_http.post("/batches/new/", data=data, headers=HTMX)
    assert response.status_code == 200
    assert message in html.unescape(response.text)
    assert not Batch.objects.filter(owner=alice).exists()


def test_metadata_at_the_limits_reaches_the_provider(alice_http, alice):
    keys = ["k" * 64] + [f"k{n}" for n in range(15)]
    values = ["v" * 512] + ["x"] * 15
    data = form(local_connection(alice), metadata_key=keys, metadata_value=values)
    response = alice_http.post("/batches/new/", data=data, headers=HTMX)
    assert "created with 3 requests" in response.text
    batch = Batch.objects.get(owner=alice)
    assert batch.data["metadata"] == dict(zip(keys, values, strict=True))
    wait_for_status(alice_http, batch.pk, TERMINAL)


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ("12h", "completion_window: must be between 24h and 336h (got 12h)."),
        ("337h", "completion_window: must be between 24h and 336h (got 337h)."),
        ("1d", "completion_window: write it as a number of hours, like 24h."),
    ],
)
def test_a_completion_window_out_of_bounds_is_refused(alice_http, alice, window, message):
    response = alice_http.post(
        "/batches/new/", data=form(local_connection(alice), completion_window=window), headers=HTMX
    )
    assert message in html.unescape(response.text)
    assert not Batch.objects.filter(owner=alice).exists()


def test_a_336h_window_is_accepted(alice_http, alice):
    response = alice_http.post(
        "/batches/new/", data=form(local_connection(alice), completion_window="336h"), headers=HTMX
    )
    assert "created with 3 requests" in response.text
    batch = Batch.objects.get(owner=alice)
    assert batch.data["completion_window"] == "336h"
    assert batch.data["expires_at"] - batch.data["created_at"] == 336 * 3600
    wait_for_status(alice_http, batch.pk, TERMINAL)


def test_prompts_and_model_are_required_when_writing_prompts(alice_http, alice):
    response = alice_http.post(
        "/batches/new/", data=form(local_connection(alice), prompts="  \n ", model=""), headers=HTMX
    )
    page = html.unescape(response.text)
    assert "prompts: write at least one prompt (one per line)." in page
    assert "model: choose the model that answers the prompts." in page


def test_cancel_stops_a_running_batch(alice_http, alice):
    prompts = "\n".join(f"Tell a long story number {n}." for n in range(60))
    data = form(local_connection(alice), prompts=prompts, max_tokens="400")
    alice_http.post("/batches/new/", data=data, headers=HTMX)
    batch = Batch.objects.get(owner=alice)
    response = alice_http.post(f"/batches/{batch.pk}/cancel/", headers=HTMX)
    assert response.status_code == 200
    assert re.search(r'data-status="(cancelling|cancelled)"', response.text)
    final = wait_for_status(alice_http, batch.pk, ("cancelled",))
    assert ">Cancel</button>" not in final
    assert "<dt>Cancelled</dt>" in final
    batch.refresh_from_db()
    assert batch.status == "cancelled" and batch.data["cancelled_at"]


def test_a_rejected_key_is_explained_with_the_next_step(alice_http, alice, live_server):
    broken = add_connection(alice, name="Broken", url=live_server.api_url, key="sk-wrong-key-0000")
    hosted_model = add_by_hand(broken, "Qwen/Qwen3-8B").model_id
    response = alice_http.post("/batches/new/", data=form(broken, model=hosted_model), headers=HTMX)
    page = html.unescape(response.text)
    assert "API key rejected" in page and "(HTTP 401)" in page
    assert "Check the API key of this connection in Connections." in page


def test_a_plain_post_redirects_to_the_list(alice_http, alice):
    response = alice_http.post("/batches/new/", data=form(local_connection(alice)))
    assert response.status_code == 302 and response.headers["location"] == "/batches/"
    page = alice_http.get("/batches/").text
    batch = Batch.objects.get(owner=alice)
    assert f"Batch {batch.remote_id} created with 3 requests." in page
    assert f'id="batch-{batch.pk}"' in page
    wait_for_status(alice_http, batch.pk, TERMINAL)


def test_a_failed_request_is_shown_as_failed_and_its_error_file_downloads(alice_http, alice):
    lines = [
        {"custom_id": "good", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": "local/chat", "messages": [{"role": "user", "content": "Hello"}]}},
        {"custom_id": "bad", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": "local/no-such-model", "messages": [{"role": "user", "content": "Hello"}]}},
    ]  # fmt: skip
    content = "".join(json.dumps(line) + "\n" for line in lines).encode()
    data = form(local_connection(alice), source="upload")
    alice_http.post("/batches/new/", data=data, files={"file": ("mixed.jsonl", content)}, headers=HTMX)
    batch = Batch.objects.get(owner=alice)
    final = wait_for_status(alice_http, batch.pk, TERMINAL)
    assert "2 of 2 done" in final and "1 failed" in final
    assert "Download errors" in final
    errors = alice_http.get(f"/batches/{batch.pk}/download/errors/")
    assert errors.status_code == 200
    assert [json.loads(raw)["custom_id"] for raw in errors.text.splitlines()] == ["bad"]
    page = html.unescape(alice_http.get(f"/batches/{batch.pk}/results/").text)
    assert "1 answered, 1 failed" in page
    assert "Failed: " in row_of(page, "bad") and "local/no-such-model" in row_of(page, "bad")
    assert "Failed" not in row_of(page, "good")
