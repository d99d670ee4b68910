"""Batches over real HTTP: creation and its limits, the lifecycle to completed with output and error files,
cancel, listing, isolation, and the runner across server restarts and several server processes."""

import json
import os
import signal
import time
from contextlib import contextmanager
from datetime import timedelta

import boto3
import httpx
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.utils import timezone
from moto import mock_aws

from playground.lib import files as stored_files
from playground.localapi import keys
from playground.localapi.engines import batch_runner
from playground.localapi.engines import batches as engine
from playground.localapi.models import Batch
from tests.conftest import LOCAL_API_TEST_KEY, free_port, start_server, stop_server

OWNER = keys.digest(LOCAL_API_TEST_KEY)
OTHER_OWNER = keys.digest("sk-someone-else")
AUTH = {"Authorization": f"Bearer {LOCAL_API_TEST_KEY}"}
FAST_SERVER = {"LOCAL_API_TOKEN_RATE": "0", "LOCAL_API_BATCH_STALE_SECONDS": "2"}


def line(custom_id: str, model: str = "local/chat", text: str | None = None) -> dict:
    return {
        "custom_id": custom_id,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": model, "messages": [{"role": "user", "content": text or f"Say hello to {custom_id}"}]},
    }


def upload(api_url: str, items: list[dict]) -> str:
    data = "".join(json.dumps(i) + "\n" for i in items).encode()
    response = httpx.post(
        f"{api_url}/files", headers=AUTH, data={"purpose": "batch"}, files={"file": ("in.jsonl", data)}, timeout=30
    )
    assert response.status_code == 200, response.text
    return response.json()["id"]


def create(api_url: str, file_id: str, **fields) -> httpx.Response:
    body = {"input_file_id": file_id, "endpoint": "/v1/chat/completions", "completion_window": "24h", **fields}
    return httpx.post(f"{api_url}/batches", headers=AUTH, json=body, timeout=30)


def get(api_url: str, path: str) -> httpx.Response:
    return httpx.get(f"{api_url}{path}", headers=AUTH, timeout=30)


def wait_for(api_url: str, batch_id: str, statuses=engine.TERMINAL, timeout: float = 30) -> dict:
    """The batch once it is in one of `statuses` (by default, once it ended). A test that starts a batch waits for
    its end: a runner still writing while the database is flushed after the test deadlocks with the flush's
    TRUNCATE on PostgreSQL."""
    deadline = time.monotonic() + timeout
    while True:
        batch = get(api_url, f"/batches/{batch_id}").json()
        if batch["status"] in statuses:
            return batch
        if time.monotonic() > deadline:
            raise AssertionError(f"batch stayed {batch['status']}: {batch}")
        time.sleep(0.1)


def jsonl_lines(api_url: str, file_id: str) -> list[dict]:
    response = get(api_url, f"/files/{file_id}/content")
    assert response.status_code == 200
    return [json.loads(raw) for raw in response.text.splitlines()]


@pytest.fixture
def file_id(live_server) -> str:
    return upload(live_server.api_url, [line("one"), line("two")])


def test_a_new_batch_is_in_queue_with_every_field_of_the_spec(live_server, file_id):
    response = create(live_server.api_url, file_id, metadata={"project": "demo"}, replace={"anything": 1})
    assert response.status_code == 200, response.text
    batch = response.json()
    assert set(batch) == {
        "id", "object", "endpoint", "errors", "input_file_id", "completion_window", "status", "output_file_id",
        "error_file_id", "created_at", "in_progress_at", "expires_at", "finalizing_at", "completed_at", "failed_at",
        "expired_at", "cancelling_at", "cancelled_at", "request_counts", "metadata",
    }  # fmt: skip
    assert batch["id"].startswith("batch_")
    assert batch["object"] == "batch"
    assert batch["status"] == "in_queue"
    assert batch["endpoint"] == "/v1/chat/completions"
    assert batch["input_file_id"] == file_id
    assert batch["completion_window"] == "24h"
    assert batch["expires_at"] == batch["created_at"] + 24 * 3600
    assert batch["metadata"] == {"project": "demo"}
    for field in ("in_progress_at", "finalizing_at", "completed_at", "failed_at", "expired_at", "cancelling_at",
                  "cancelled_at", "output_file_id", "error_file_id", "errors"):  # fmt: skip
        assert batch[field] is None, field
    assert response.headers["x-service-trace-id"]
    wait_for(live_server.api_url, batch["id"])  # ended before the database is flushed (see wait_for)


@pytest.mark.django_db(transaction=True)
def test_the_replace_object_is_stored(live_server, file_id):
    batch = create(live_server.api_url, file_id, replace={"model": "local/minp"}).json()
    assert Batch.objects.get(pk=batch["id"]).replace == {"model": "local/minp"}
    wait_for(live_server.api_url, batch["id"])


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"input_file_id": None}, "input_file_id: required"),
        ({"input_file_id": "file-unknown"}, "input_file_id: no file 'file-unknown'"),
        ({"endpoint": "/v1/embeddings"}, "endpoint: must be /v1/chat/completions"),
        ({"endpoint": None}, "endpoint: must be /v1/chat/completions"),
        ({"completion_window": "23h"}, "completion_window: must be between 24h and 336h"),
        ({"completion_window": "337h"}, "completion_window: must be between 24h and 336h"),
        ({"completion_window": "24"}, "completion_window: must look like 24h"),
        ({"completion_window": "1d"}, "completion_window: must look like 24h"),
        ({"completion_window": 24}, "completion_window: must look like 24h"),
        ({"metadata": {f"k{i}": "v" for i in range(17)}}, "metadata: more than the limit of 16 pairs"),
        ({"metadata": {"k" * 65: "v"}}, "longer than the limit of 64 characters"),
        ({"metadata": {"k": "v" * 513}}, "metadata.k: longer than the limit of 512 characters"),
        ({"metadata": {"k": 5}}, "metadata.k: must be a string"),
        ({"metadata": ["a"]}, "metadata: must be an object"),
        ({"replace": "yes"}, "replace: must be an object"),
    ],
)
def test_each_rule_of_a_batch_request_is_enforced(live_server, file_id, fields, message):
    response = create(live_server.api_url, file_id, **fields)
    assert response.status_code == 400
    body = response.json()
    assert message in body["message"]
    assert body["code"] == 20015
    assert body["data"] is None


def test_the_limits_themselves_are_accepted(live_server, file_id):
    metadata = {f"{i:02d}" + "k" * 62: "v" * 512 for i in range(16)}
    response = create(live_server.api_url, file_id, completion_window="336h", metadata=metadata)
    assert response.status_code == 200, response.text
    assert response.json()["metadata"] == metadata
    assert response.json()["expires_at"] - response.json()["created_at"] == 336 * 3600
    wait_for(live_server.api_url, response.json()["id"])


def test_a_body_that_is_not_json_is_refused(live_server):
    response = httpx.post(f"{live_server.api_url}/batches", headers=AUTH, content=b"{nope")
    assert response.status_code == 400
    assert response.json()["message"].startswith("body:")


def test_a_batch_runs_to_completed_with_output_and_error_files(live_server):
    file_id = upload(
        live_server.api_url, [line("a"), line("b"), line("bad-model", model="local/nope"), line("c", text="Count")]
    )
    batch = wait_for(live_server.api_url, create(live_server.api_url, file_id).json()["id"])
    assert batch["status"] == "completed", batch
    assert batch["request_counts"] == {"total": 4, "completed": 3, "failed": 1}
    assert batch["created_at"] <= batch["in_progress_at"] <= batch["finalizing_at"] <= batch["completed_at"]
    assert batch["failed_at"] is None and batch["cancelled_at"] is None

    output = jsonl_lines(live_server.api_url, batch["output_file_id"])
    assert [item["custom_id"] for item in output] == ["a", "b", "c"]
    for item in output:
        assert item["id"].startswith("batch_req_")
        assert item["error"] is None
        assert item["response"]["status_code"] == 200
        assert item["response"]["request_id"]
        assert item["response"]["body"]["object"] == "chat.completion"
        assert item["response"]["body"]["choices"][0]["message"]["content"]

    errors = jsonl_lines(live_server.api_url, batch["error_file_id"])
    assert len(errors) == 1
    assert errors[0]["custom_id"] == "bad-model"
    assert errors[0]["response"]["status_code"] == 400
    assert errors[0]["error"]["code"] == "20012"
    assert "model" in errors[0]["error"]["message"]

    for file_id in (batch["output_file_id"], batch["error_file_id"]):
        meta = get(live_server.api_url, f"/files/{file_id}").json()
        assert meta["purpose"] == "batch_output"
        assert meta["status"] == "processed"  # the batch is done writing it
        assert meta["bytes"] == len(get(live_server.api_url, f"/files/{file_id}/content").content)


def test_a_batch_where_nothing_fails_has_no_error_file(live_server, file_id):
    batch = wait_for(live_server.api_url, create(live_server.api_url, file_id).json()["id"])
    assert batch["status"] == "completed"
    assert batch["error_file_id"] is None
    assert batch["request_counts"] == {"total": 2, "completed": 2, "failed": 0}


def hold(batch_id: str) -> None:
    """Make the batch look taken by a live worker, so no runner touches it until `release`."""
    Batch.objects.filter(pk=batch_id).update(worker="test-hold", heartbeat=timezone.now() + timedelta(hours=1))


def release(batch_id: str) -> None:
    Batch.objects.filter(pk=batch_id).update(worker="", heartbeat=None)


@pytest.mark.django_db(transaction=True)
def test_cancel_moves_a_queued_batch_to_cancelling_then_cancelled(live_server, file_id):
    batch = engine.create_batch(
        owner=OWNER,
        payload={"input_file_id": file_id, "endpoint": "/v1/chat/completions", "completion_window": "24h"},
    )
    hold(batch.id)
    response = httpx.post(f"{live_server.api_url}/batches/{batch.id}/cancel", headers=AUTH)
    assert response.status_code == 200
    assert response.json()["status"] == "cancelling"
    assert response.json()["cancelling_at"] is not None
    # Cancelling again is harmless.
    assert httpx.post(f"{live_server.api_url}/batches/{batch.id}/cancel", headers=AUTH).json()["status"] == "cancelling"
    release(batch.id)
    done = wait_for(live_server.api_url, batch.id)
    assert done["status"] == "cancelled"
    assert done["cancelled_at"] >= done["cancelling_at"]
    assert done["completed_at"] is None and done["in_progress_at"] is None


@pytest.mark.django_db(transaction=True)
def test_cancel_stops_a_running_batch_and_keeps_what_was_done(live_server):
    file_id = upload(live_server.api_url, [line(f"r{i}") for i in range(6)])
    batch = engine.create_batch(
        owner=OWNER,
        payload={"input_file_id": file_id, "endpoint": "/v1/chat/completions", "completion_window": "24h"},
    )
    # As if a worker had started it and run the first two requests, then stalled (still holding it).
    out = engine.create_file(owner=OWNER, filename="o.jsonl", purpose="batch_output", data=b"")
    err = engine.create_file(owner=OWNER, filename="e.jsonl", purpose="batch_output", data=b"")
    done_lines = [{"id": f"batch_req_{i}", "custom_id": f"r{i}", "response": {}, "error": None} for i in range(2)]
    with open(out.content.path, "w") as handle:
        handle.write("".join(json.dumps(d) + "\n" for d in done_lines))
    Batch.objects.filter(pk=batch.id).update(
        status="in_progress", in_progress_at=int(time.time()), output_file=out, error_file=err
    )
    hold(batch.id)
    assert httpx.post(f"{live_server.api_url}/batches/{batch.id}/cancel", headers=AUTH).json()["status"] == "cancelling"
    release(batch.id)
    done = wait_for(live_server.api_url, batch.id)
    assert done["status"] == "cancelled"
    assert done["request_counts"] == {"total": 6, "completed": 2, "failed": 0}
    assert [i["custom_id"] for i in jsonl_lines(live_server.api_url, done["output_file_id"])] == ["r0", "r1"]


def test_a_finished_batch_cannot_be_cancelled(live_server, file_id):
    batch = wait_for(live_server.api_url, create(live_server.api_url, file_id).json()["id"])
    response = httpx.post(f"{live_server.api_url}/batches/{batch['id']}/cancel", headers=AUTH)
    assert response.status_code == 400
    assert "completed cannot be cancelled" in response.json()["message"]


def test_the_list_pages_newest_first_with_limit_and_after(live_server, file_id):
    created = [create(live_server.api_url, file_id).json()["id"] for _ in range(5)]
    seen, after = [], None
    while True:
        params = {"limit": 2, **({"after": after} if after else {})}
        page = httpx.get(f"{live_server.api_url}/batches", headers=AUTH, params=params).json()
        assert page["object"] == "list"
        assert len(page["data"]) <= 2
        if page["data"]:
            assert page["first_id"] == page["data"][0]["id"]
            assert page["last_id"] == page["data"][-1]["id"]
        seen += [b["id"] for b in page["data"]]
        if not page["has_more"]:
            break
        after = page["last_id"]
    assert len(seen) == len(set(seen))
    mine = [b for b in seen if b in created]
    assert mine == list(reversed(created))
    for batch_id in created:
        wait_for(live_server.api_url, batch_id)


def test_a_bad_limit_is_refused(live_server):
    for limit in ("0", "101", "x"):
        response = httpx.get(f"{live_server.api_url}/batches", headers=AUTH, params={"limit": limit})
        assert response.status_code == 400
        assert response.json()["message"].startswith("limit:")


@pytest.mark.django_db(transaction=True)
def test_another_keys_batches_and_files_are_invisible(live_server, file_id):
    theirs_file = engine.create_file(owner=OTHER_OWNER, filename="t.jsonl", purpose="batch", data=b"{}\n")
    theirs = engine.create_batch(
        owner=OTHER_OWNER,
        payload={"input_file_id": theirs_file.id, "endpoint": "/v1/chat/completions", "completion_window": "24h"},
    )
    hold(theirs.id)
    assert get(live_server.api_url, f"/batches/{theirs.id}").status_code == 404
    cancel = httpx.post(f"{live_server.api_url}/batches/{theirs.id}/cancel", headers=AUTH)
    assert cancel.status_code == 404
    assert Batch.objects.get(pk=theirs.id).status == "in_queue"
    listed = httpx.get(f"{live_server.api_url}/batches", headers=AUTH, params={"limit": 100}).json()
    assert theirs.id not in [b["id"] for b in listed["data"]]
    response = create(live_server.api_url, theirs_file.id)
    assert response.status_code == 400
    assert "no file" in response.json()["message"]


def test_an_output_file_cannot_be_a_batch_input(live_server, file_id):
    batch = wait_for(live_server.api_url, create(live_server.api_url, file_id).json()["id"])
    response = create(live_server.api_url, batch["output_file_id"])
    assert response.status_code == 400
    assert "purpose 'batch_output'" in response.json()["message"]


@pytest.mark.django_db(transaction=True)
def test_a_batch_past_its_window_expires(live_server, file_id):
    batch = engine.create_batch(
        owner=OWNER,
        payload={"input_file_id": file_id, "endpoint": "/v1/chat/completions", "completion_window": "24h"},
    )
    Batch.objects.filter(pk=batch.id).update(expires_at=int(time.time()) - 1)
    done = wait_for(live_server.api_url, batch.id)
    assert done["status"] == "expired"
    assert done["expired_at"] is not None
    assert done["completed_at"] is None


@pytest.mark.django_db(transaction=True)
def test_a_batch_whose_input_cannot_be_processed_fails_with_errors(live_server):
    broken = engine.create_file(owner=OWNER, filename="b.jsonl", purpose="batch", data=b'{"custom_id": "a"}\n')
    response = create(live_server.api_url, broken.id)
    done = wait_for(live_server.api_url, response.json()["id"])
    assert done["status"] == "failed"
    assert done["failed_at"] is not None
    assert "line 1: method must be POST" in done["errors"][0]


# --- The runner across processes --------------------------------------------------------------------------------


@contextmanager
def paused(server):
    """Freeze the session's server so that only the servers a test starts run batches meanwhile."""
    deadline = time.monotonic() + 15
    while Batch.objects.filter(status__in=engine.ACTIVE).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(server.process.pid, signal.SIGCONT)


def worker_pid(batch_id: str) -> int:
    return int(Batch.objects.get(pk=batch_id).worker.split(":")[1])


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_batch_resumes_after_its_server_stops_and_counts_each_request_once(live_server, tmp_path):
    total = 12
    with paused(live_server):
        port = free_port()
        # No drain: the stop ends the batch mid-way (a drain would let it finish), as the end of a grace period does.
        first = start_server(
            port, tmp_path / "first.log", **FAST_SERVER, LOCAL_API_BATCH_DELAY="0.3", PLAYGROUND_DRAIN_SECONDS="0"
        )
        api_url = f"http://127.0.0.1:{port}/local/v1"
        try:
            file_id = upload(api_url, [line(f"q{i}") for i in range(total)])
            batch_id = create(api_url, file_id).json()["id"]
            deadline = time.monotonic() + 20
            while (Batch.objects.get(pk=batch_id).request_counts or {}).get("completed", 0) < 3:
                assert time.monotonic() < deadline, "the first server never made progress"
                time.sleep(0.1)
            assert worker_pid(batch_id) == first.pid
        finally:
            stop_server(first)
        stopped = Batch.objects.get(pk=batch_id)
        assert stopped.status == "in_progress"
        assert stopped.request_counts["completed"] < total

        port = free_port()
        second = start_server(port, tmp_path / "second.log", **FAST_SERVER)
        api_url = f"http://127.0.0.1:{port}/local/v1"
        try:
            done = wait_for(api_url, batch_id, timeout=30)
        finally:
            stop_server(second)
    assert done["status"] == "completed"
    assert worker_pid(batch_id) == second.pid
    assert done["request_counts"] == {"total": total, "completed": total, "failed": 0}
    custom_ids = [item["custom_id"] for item in jsonl_lines(live_server.api_url, done["output_file_id"])]
    assert sorted(custom_ids) == sorted(f"q{i}" for i in range(total))


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_two_server_processes_never_run_the_same_batch(live_server, tmp_path):
    env = {**FAST_SERVER, "LOCAL_API_BATCH_DELAY": "0.05", "LOCAL_API_BATCH_CONCURRENCY": "2"}
    with paused(live_server):
        ports = [free_port(), free_port()]
        servers = [start_server(p, tmp_path / f"s{p}.log", **env) for p in ports]
        urls = [f"http://127.0.0.1:{p}/local/v1" for p in ports]
        try:
            for url in urls:
                get(url, "/batches")  # wakes each runner (they also start with the server)
            ids = []
            for n in range(12):
                url = urls[n % 2]
                file_id = upload(url, [line(f"b{n}-{i}") for i in range(4)])
                ids.append(create(url, file_id).json()["id"])
            finished = [wait_for(urls[0], batch_id, timeout=60) for batch_id in ids]
        finally:
            for server in servers:
                stop_server(server)
    pids = {server.pid for server in servers}
    used = set()
    for n, batch in enumerate(finished):
        assert batch["status"] == "completed"
        assert batch["request_counts"] == {"total": 4, "completed": 4, "failed": 0}
        custom_ids = [item["custom_id"] for item in jsonl_lines(live_server.api_url, batch["output_file_id"])]
        assert sorted(custom_ids) == [f"b{n}-{i}" for i in range(4)]
        assert worker_pid(batch["id"]) in pids
        used.add(worker_pid(batch["id"]))
    assert used == pids, "both processes should have taken batches"


@pytest.mark.django_db
def test_only_a_process_storing_files_where_the_batch_does_claims_it(settings):
    """A server sharing the database but not the files (a bucket, where the batch's are on this disk) would find
    neither its input nor its results: it leaves the batch to the others, which claim it."""
    data = (json.dumps(line("one")) + "\n").encode()
    file = engine.create_file(owner=OWNER, filename="in.jsonl", purpose="batch", data=data)
    payload = {"input_file_id": file.id, "endpoint": "/v1/chat/completions", "completion_window": "24h"}
    batch = engine.create_batch(owner=OWNER, payload=payload)
    on_disk = settings.STORAGES
    settings.STORAGES = {
        **on_disk,
        "default": {"BACKEND": "playground.lib.files.S3Storage", "OPTIONS": {"bucket_name": "b"}},
    }
    assert batch_runner.claim_next() is None
    assert Batch.objects.get(pk=batch.pk).worker == ""
    settings.STORAGES = on_disk
    assert batch_runner.claim_next() == batch.pk
    file.content.delete(save=False)


@pytest.mark.django_db(transaction=True)
def test_a_runner_that_lost_its_batch_leaves_the_stored_results_to_the_new_one(settings, tmp_path, monkeypatch):
    """With a bucket, a runner writes its results on its own disk and stores them when it stops. One that stalled
    and was taken over must not store them then: it would replace what the process that took over stored."""
    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="batch-files")
        settings.DATA_DIR = tmp_path
        settings.STORAGES = {
            **settings.STORAGES,
            "default": {"BACKEND": "playground.lib.files.S3Storage", "OPTIONS": {"bucket_name": "batch-files"}},
        }
        data = (json.dumps(line("one")) + "\n").encode()
        file = engine.create_file(owner=OWNER, filename="in.jsonl", purpose="batch", data=data)
        payload = {"input_file_id": file.id, "endpoint": "/v1/chat/completions", "completion_window": "24h"}
        batch = engine.create_batch(owner=OWNER, payload=payload)
        assert batch_runner.claim_next() == batch.pk

        async def taken_over_meanwhile(batch, request):
            await sync_to_async(_take_over)(batch.pk)
            return True, {"custom_id": request.custom_id}

        monkeypatch.setattr(batch_runner, "_execute", taken_over_meanwhile)
        async_to_sync(batch_runner.run_batch)(batch.pk)
        output = Batch.objects.select_related("output_file").get(pk=batch.pk).output_file
        assert stored_files.read(output.content.name) == b"stored by the process that took over\n"
        assert not list(tmp_path.rglob("*.jsonl"))  # nor is the spool left behind


def _take_over(batch_id: str) -> None:
    batch = Batch.objects.select_related("output_file").get(pk=batch_id)
    Batch.objects.filter(pk=batch_id).update(worker="another-process")
    stored_files.save(batch.output_file.content.name, b"stored by the process that took over\n")
