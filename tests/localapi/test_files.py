"""POST /files, GET /files/{id}, GET /files/{id}/content over real HTTP against the live server."""

import json

import httpx
import pytest

from playground.localapi import keys
from playground.localapi.engines import batches as engine

OTHER_OWNER = keys.digest("sk-someone-else")


def line(custom_id: str, **overrides) -> dict:
    item = {
        "custom_id": custom_id,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "local/chat", "messages": [{"role": "user", "content": f"Hello {custom_id}"}]},
    }
    item.update(overrides)
    return item


def jsonl(*items) -> bytes:
    return "".join((i if isinstance(i, str) else json.dumps(i)) + "\n" for i in items).encode()


def upload(server, data: bytes, purpose: str = "batch", filename: str = "requests.jsonl") -> httpx.Response:
    return httpx.post(
        f"{server.api_url}/files",
        headers={"Authorization": f"Bearer {server.api_key}"},
        data={"purpose": purpose},
        files={"file": (filename, data, "application/jsonl")},
        timeout=30,
    )


def get(server, path: str, key: str | None = None) -> httpx.Response:
    return httpx.get(
        f"{server.api_url}{path}", headers={"Authorization": f"Bearer {key or server.api_key}"}, timeout=30
    )


def test_an_uploaded_file_is_returned_as_an_openai_file_object(live_server):
    data = jsonl(line("a"), line("b"))
    response = upload(live_server, data, filename="mine.jsonl")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["id"].startswith("file-")
    assert body["object"] == "file"
    assert body["bytes"] == len(data)
    assert body["filename"] == "mine.jsonl"
    assert body["purpose"] == "batch"
    assert body["status"] == "processed"  # validated on upload; never null
    assert isinstance(body["created_at"], int)
    assert response.headers["x-service-trace-id"]

    assert get(live_server, f"/files/{body['id']}").json() == body
    content = get(live_server, f"/files/{body['id']}/content")
    assert content.status_code == 200
    assert content.content == data
    assert content.headers["content-type"].startswith("application/jsonl")


def test_a_purpose_other_than_batch_is_refused(live_server):
    response = upload(live_server, jsonl(line("a")), purpose="fine-tune")
    assert response.status_code == 400
    assert response.json()["message"].startswith("purpose:")
    assert response.json()["code"] == 20015


def test_an_upload_without_a_file_is_refused(live_server):
    response = httpx.post(
        f"{live_server.api_url}/files",
        headers={"Authorization": f"Bearer {live_server.api_key}"},
        data={"purpose": "batch"},
    )
    assert response.status_code == 400
    assert response.json()["message"].startswith("file:")


@pytest.mark.parametrize(
    ("bad_line", "expected"),
    [
        ("{not json", "line 2: invalid JSON"),
        ("[1, 2]", "line 2: must be a JSON object"),
        (json.dumps({k: v for k, v in line("x").items() if k != "custom_id"}), "line 2: custom_id is required"),
        (json.dumps(line("first")), "line 2: custom_id 'first' duplicates line 1"),
        (json.dumps(line("x", url="/v1/embeddings")), "line 2: url must be /v1/chat/completions"),
        (json.dumps(line("x", method="GET")), "line 2: method must be POST"),
        (json.dumps(line("x", body="hello")), "line 2: body must be a JSON object"),
        (
            json.dumps(line("x", body={"messages": [{"role": "user", "content": "hi"}]})),
            "line 2: body.model is required",
        ),
        (json.dumps(line("x", body={"model": "local/chat"})), "line 2: body.messages is required"),
        (json.dumps(line("x" * 513)), "line 2: custom_id is longer than the limit of 512"),
    ],
)
def test_each_invalid_line_is_reported_with_its_line_number(live_server, bad_line, expected):
    response = upload(live_server, jsonl(line("first"), bad_line))
    assert response.status_code == 400
    assert expected in response.json()["message"]


def test_every_invalid_line_is_named_not_only_the_first(live_server):
    data = jsonl(line("a"), "oops", line("b"), line("a"), "", line("c", method="PUT"))
    message = upload(live_server, data).json()["message"]
    assert "line 2: invalid JSON" in message
    assert "line 4: custom_id 'a' duplicates line 1" in message
    # The blank line 5 is skipped but still counted.
    assert "line 6: method must be POST" in message


def test_an_empty_file_is_refused(live_server):
    response = upload(live_server, b"\n\n")
    assert response.status_code == 400
    assert "no requests" in response.json()["message"]


def test_a_file_over_the_line_limit_is_refused(live_server):
    compact = '{"custom_id":"%d","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[1]}}\n'
    data = "".join(compact % i for i in range(engine.MAX_FILE_LINES + 1)).encode()
    response = upload(live_server, data)
    assert response.status_code == 400
    assert "more than the limit of 50000 requests" in response.json()["message"]


def test_a_file_over_the_size_limit_is_refused(monkeypatch):
    monkeypatch.setattr(engine, "MAX_FILE_BYTES", 100)
    with pytest.raises(engine.InvalidInput, match="larger than the limit"):
        engine.parse_input(jsonl(line("a"), line("b")))


def test_a_file_that_is_not_utf8_is_refused(live_server):
    response = upload(live_server, b"\xff\xfe" + jsonl(line("a")))
    assert response.status_code == 400
    assert "UTF-8" in response.json()["message"]


@pytest.mark.django_db(transaction=True)
def test_another_keys_file_is_not_found(live_server):
    theirs = engine.create_file(owner=OTHER_OWNER, filename="theirs.jsonl", purpose="batch", data=jsonl(line("a")))
    for path in (f"/files/{theirs.id}", f"/files/{theirs.id}/content"):
        response = get(live_server, path)
        assert response.status_code == 404
        assert response.headers["content-type"].startswith("text/plain")
        assert theirs.id in response.text
    listed = httpx.get(
        f"{live_server.api_url}/files", headers={"Authorization": f"Bearer {live_server.api_key}"}
    ).json()
    assert theirs.id not in [f["id"] for f in listed["data"]]


def test_an_unknown_file_is_not_found(live_server):
    assert get(live_server, "/files/file-nope").status_code == 404


def test_files_need_a_valid_key(live_server):
    assert get(live_server, "/files/file-nope", key="sk-wrong").status_code == 401
    response = httpx.post(f"{live_server.api_url}/files", data={"purpose": "batch"})
    assert response.status_code == 401
