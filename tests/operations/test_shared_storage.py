"""Two daphne processes with separate data directories and one S3-compatible bucket (moto's standalone server,
started here on 127.0.0.1): what one makes, the other serves — a clip played and downloaded with Range, a share
frozen on one opened and forked on the other, a chat attachment, a local batch — and neither keeps a file on its
disk."""

import json
import subprocess
import sys
import time

import boto3
import httpx
import pytest
from django.urls import reverse

from playground.batches.models import TERMINAL, Batch
from playground.chat.models import Attachment, Conversation, Message
from playground.connections.models import Connection
from playground.sharing.models import Share
from playground.speech.models import SpeechClip
from tests.batches.conftest import wait_for_status
from tests.batches.test_batches import form as batch_form
from tests.chat.test_attachments import png
from tests.conftest import LOCAL_API_TEST_KEY, free_port
from tests.faults.conftest import logged_in
from tests.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

BUCKET = "playground-files"
# The bound of the API calls made without a session, as `logged_in` has (a bound against hanging): on a loaded
# machine a fresh server's first requests took more than httpx's default 5 s.
API = {"timeout": 60}
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture
def bucket():
    """moto's S3 server on a free port with one empty bucket; the environment that points a server at it."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(endpoint, timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("moto's server did not start") from None
                time.sleep(0.1)
        client = boto3.client("s3", endpoint_url=endpoint, **_boto_credentials())
        client.create_bucket(Bucket=BUCKET)
        yield {"PLAYGROUND_S3_BUCKET": BUCKET, "PLAYGROUND_S3_ENDPOINT_URL": endpoint, **CREDENTIALS}, client
    finally:
        process.terminate()
        process.wait(timeout=10)


def _boto_credentials() -> dict:
    return {
        "aws_access_key_id": CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        "region_name": CREDENTIALS["AWS_DEFAULT_REGION"],
    }


@pytest.fixture
def pair(servers, bucket, tmp_path):
    env, client = bucket
    first = servers(PLAYGROUND_DATA_DIR=str(tmp_path / "first"), **env)
    second = servers(PLAYGROUND_DATA_DIR=str(tmp_path / "second"), **env)
    yield first, second, client
    # Nothing was kept on either machine's disk: every file is in the bucket.
    for directory in ("first", "second"):
        kept = [p for p in (tmp_path / directory).rglob("*") if p.is_file()]
        assert kept == [], kept


def stored(client, name: str) -> bytes:
    return client.get_object(Bucket=BUCKET, Key=name)["Body"].read()


def test_a_clip_made_on_one_server_plays_and_downloads_with_range_from_the_other(alice, catalog, pair):
    first, second, client = pair
    connection = Connection.objects.get(owner=alice, is_local=True)
    with logged_in(alice, first) as http:
        response = http.post(
            reverse("speech:create"),
            data={
                "connection": connection.pk,
                "model": "local/tts",
                "input": "[S1] A clip made on the first server, played on the second.",
                "voice": "local/tts:alex",
                "response_format": "mp3",
                "sample_rate": "44100",
                "speed": "1",
                "gain": "0",
                "stream": "on",
            },
        )
        assert response.status_code == 200, response.text
        clip = SpeechClip.objects.get(owner=alice)
        # The player on the process that writes it follows the local spool while the clip arrives.
        played_while_arriving = http.get(reverse("speech:stream", args=[clip.pk])).content
    wait_for(lambda: SpeechClip.objects.get(pk=clip.pk).status == SpeechClip.COMPLETE, timeout=60, what="the clip")
    clip.refresh_from_db()
    audio = stored(client, clip.file)
    assert len(audio) == clip.bytes > 1000
    assert played_while_arriving == audio

    with logged_in(alice, second) as http:
        played = http.get(reverse("speech:stream", args=[clip.pk]))
        assert played.status_code == 200 and played.content == audio
        whole = http.get(reverse("speech:download", args=[clip.pk]))
        assert whole.status_code == 200 and whole.content == audio
        part = http.get(reverse("speech:download", args=[clip.pk]), headers={"Range": "bytes=100-1099"})
        assert part.status_code == 206 and part.headers["Content-Range"] == f"bytes 100-1099/{len(audio)}"
        assert part.content == audio[100:1100]
        tail = http.get(reverse("speech:download", args=[clip.pk]), headers={"Range": "bytes=-10"})
        assert tail.status_code == 206 and tail.content == audio[-10:]

    # Shared on the first: the frozen copy is in the bucket, and the second serves it (and forks it).
    with logged_in(alice, first) as http:
        response = http.post(
            reverse("sharing:source", args=["speech", clip.pk]), data={"visibility": Share.ANYONE, "expiry": "1d"}
        )
        assert response.status_code in (200, 302), response.text
    share = Share.objects.for_source(clip).get()
    frozen = share.files.get(key="audio")
    assert frozen.file != clip.file and stored(client, frozen.file) == audio
    page = httpx.get(f"{second.url}/s/{share.token}")
    assert page.status_code == 200 and "A clip made on the first server" in page.text
    part = httpx.get(f"{second.url}/s/{share.token}/files/audio", headers={"Range": "bytes=0-99"})
    assert part.status_code == 206 and part.content == audio[:100]
    with logged_in(alice, second) as http:
        response = http.post(f"/s/{share.token}/fork/", data={"connection": connection.pk})
        assert response.status_code in (200, 302), response.text
    fork = SpeechClip.objects.exclude(pk=clip.pk).get(owner=alice)
    assert fork.file != clip.file and stored(client, fork.file) == audio and fork.bytes == len(audio)


def test_a_chat_attachment_sent_on_one_server_opens_on_the_other(alice, catalog, pair):
    first, second, client = pair
    connection = Connection.objects.get(owner=alice, is_local=True)
    conversation = Conversation.objects.create(owner=alice, connection=connection, model_id="local/vision")
    image = png()
    with logged_in(alice, first) as http:
        response = http.post(
            reverse("chat:send", args=[conversation.pk]),
            data={"content": "what is this?"},
            files={"attachments": ("dot.png", image, "image/png")},
        )
        assert response.status_code == 200, response.text
    answer = Message.objects.get(conversation=conversation, role="assistant")
    wait_for(lambda: Message.objects.get(pk=answer.pk).status != Message.STREAMING, timeout=60, what="the answer")
    assert Message.objects.get(pk=answer.pk).status == Message.COMPLETE
    attachment = Attachment.objects.get(message__conversation=conversation)
    assert stored(client, attachment.file.name) == image
    with logged_in(alice, second) as http:
        opened = http.get(reverse("chat:attachment", args=[attachment.pk]))
        assert opened.status_code == 200 and opened.content == image
        part = http.get(reverse("chat:attachment", args=[attachment.pk]), headers={"Range": "bytes=1-3"})
        assert part.status_code == 206 and part.content == b"PNG"

    # Shared on the second, opened anonymously and forked on the first: the frozen and forked copies are objects.
    with logged_in(alice, second) as http:
        response = http.post(
            reverse("sharing:source", args=["conversation", conversation.pk]),
            data={"visibility": Share.ANYONE, "expiry": "1d"},
        )
        assert response.status_code in (200, 302), response.text
    share = Share.objects.for_source(conversation).get()
    frozen = share.files.get()
    assert httpx.get(f"{first.url}/s/{share.token}/files/{frozen.key}").content == image
    with logged_in(alice, first) as http:
        response = http.post(f"/s/{share.token}/fork/", data={"connection": connection.pk})
        assert response.status_code in (200, 302), response.text
    forked = Attachment.objects.exclude(pk=attachment.pk).get(message__conversation__owner=alice)
    assert forked.file.name != attachment.file.name and stored(client, forked.file.name) == image


def test_a_batch_sent_from_the_batches_page_on_one_server_is_read_on_the_other(alice, catalog, pair):
    first, second, _ = pair
    connection = Connection.objects.get(owner=alice, is_local=True)
    with logged_in(alice, first) as http:
        response = http.post(reverse("batches:create"), data=batch_form(connection))
        assert response.status_code == 200 and "created with 3 requests" in response.text, response.text
    batch = Batch.objects.get(owner=alice)
    with logged_in(alice, second) as http:
        row = wait_for_status(http, batch.pk, TERMINAL, timeout=90)
        # The row's words say why when the batch did not complete (a failed read of its input, an expiry).
        assert 'data-status="completed"' in row, row
        output = http.get(reverse("batches:download", args=[batch.pk, "output"]))
        assert output.status_code == 200
        lines = [json.loads(raw) for raw in output.text.splitlines()]
        assert sorted(item["custom_id"] for item in lines) == ["request-1", "request-2", "request-3"]
        assert "3 answered" in http.get(reverse("batches:results", args=[batch.pk])).text


def test_a_local_batch_created_on_one_server_is_read_on_the_other(pair):
    first, second, _ = pair
    auth = {"Authorization": f"Bearer {LOCAL_API_TEST_KEY}"}
    lines = [
        {
            "custom_id": f"q{i}",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": "local/chat", "messages": [{"role": "user", "content": f"question {i}"}]},
        }
        for i in range(3)
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    upload = httpx.post(
        f"{first.url}/local/v1/files",
        headers=auth,
        **API,
        files={"file": ("in.jsonl", data, "application/jsonl")},
        data={"purpose": "batch"},
    )
    assert upload.status_code == 200, upload.text
    file_id = upload.json()["id"]
    assert httpx.get(f"{second.url}/local/v1/files/{file_id}/content", headers=auth, **API).content == data
    batch = httpx.post(
        f"{first.url}/local/v1/batches",
        headers=auth,
        **API,
        json={"input_file_id": file_id, "endpoint": "/v1/chat/completions", "completion_window": "24h"},
    ).json()

    def finished():
        state = httpx.get(f"{second.url}/local/v1/batches/{batch['id']}", headers=auth, **API).json()
        return state if state["status"] in ("completed", "failed", "expired", "cancelled") else None

    state = wait_for(finished, timeout=90, what="the batch", every=0.5)
    assert state["status"] == "completed" and state["request_counts"]["completed"] == 3
    output = httpx.get(f"{second.url}/local/v1/files/{state['output_file_id']}/content", headers=auth, **API)
    results = [json.loads(line) for line in output.text.splitlines()]
    assert sorted(r["custom_id"] for r in results) == ["q0", "q1", "q2"]
    assert all(r["response"]["status_code"] == 200 for r in results)


def test_a_server_on_its_own_disk_sharing_the_database_leaves_the_pairs_batches_alone(pair, servers, tmp_path):
    """A third server on the same database but its own disk (the test suite's session server is one) would find
    none of the batches' files: it must not take them, or they fail with "the file cannot be read"."""
    first, second, _ = pair
    servers(PLAYGROUND_DATA_DIR=str(tmp_path / "third"))
    auth = {"Authorization": f"Bearer {LOCAL_API_TEST_KEY}"}
    sent = []
    for n in range(4):
        data = json.dumps(
            {
                "custom_id": f"b{n}",
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {"model": "local/chat", "messages": [{"role": "user", "content": f"question {n}"}]},
            }
        ).encode()
        upload = httpx.post(
            f"{first.url}/local/v1/files",
            headers=auth,
            **API,
            files={"file": ("in.jsonl", data + b"\n", "application/jsonl")},
            data={"purpose": "batch"},
        )
        body = {"input_file_id": upload.json()["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"}
        sent.append(httpx.post(f"{first.url}/local/v1/batches", headers=auth, json=body, **API).json()["id"])

    def ended(batch_id):
        state = httpx.get(f"{second.url}/local/v1/batches/{batch_id}", headers=auth, **API).json()
        return state if state["status"] in ("completed", "failed", "expired", "cancelled") else None

    for batch_id in sent:
        state = wait_for(lambda batch_id=batch_id: ended(batch_id), timeout=90, what="the batch", every=0.5)
        assert state["status"] == "completed", state["errors"]


def test_a_clip_deleted_while_it_arrives_leaves_nothing_in_the_bucket(alice, catalog, pair, tmp_path):
    first, _, client = pair
    connection = Connection.objects.get(owner=alice, is_local=True)
    with logged_in(alice, first) as http:
        response = http.post(
            reverse("speech:create"),
            data={
                "connection": connection.pk,
                "model": "local/tts",
                "input": "[S1] A long clip that nobody keeps. " * 40,
                "voice": "local/tts:alex",
                "response_format": "wav",
                "sample_rate": "24000",
                "speed": "1",
                "gain": "0",
                "stream": "on",
            },
        )
        assert response.status_code == 200, response.text
        clip = SpeechClip.objects.get(owner=alice)
        assert clip.status == SpeechClip.STREAMING
        assert list((tmp_path / "first" / "spool").rglob("*.wav"))  # it arrives into the spool
        http.post(reverse("speech:delete", args=[clip.pk]))
    # The stopped relay stores what it had (the spool goes), then finds no row and deletes what it stored: wait for
    # both, not for the spool alone (CI once looked between the two).
    wait_for(
        lambda: (
            not list((tmp_path / "first" / "spool").rglob("*.wav"))
            and client.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0
        ),
        timeout=30,
        what="the spool and the stored file removed",
    )
