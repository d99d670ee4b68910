"""A forked batch is submitted again: its requests as a new batch on the forker's connection (the local API over
HTTP). The fake provider has no batches endpoint, so this runs against the local API only."""

import httpx
import pytest

from playground.batches.models import Batch
from tests.batches.conftest import local_connection, wait_for_status

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

BODIES = [
    {"model": "local/chat", "messages": [{"role": "user", "content": "Name a colour of the sky."}]},
    {"model": "local/chat", "messages": [{"role": "user", "content": "Say hello in French."}], "max_tokens": 20},
]


def fork_of(user) -> Batch:
    return Batch.objects.create(
        owner=user,
        connection=local_connection(user),
        remote_id="fork of batch_abc",
        input_filename="shared.jsonl",
        request_count=2,
        status="completed",
        request_counts={"total": 2, "completed": 2, "failed": 0},
        metadata={"team": "docs"},
        usage_recorded=True,
        copy={"requests": BODIES, "rows": []},
    )


def test_a_forked_batch_is_submitted_again_on_the_forkers_connection(alice_http, alice, live_server):
    fork = fork_of(alice)
    page = alice_http.get("/batches/").text
    assert f"/batches/{fork.pk}/resubmit/" in page and "Submit again" in page

    response = alice_http.post(f"/batches/{fork.pk}/resubmit/", follow_redirects=True)
    assert response.status_code == 200
    again = Batch.objects.exclude(pk=fork.pk).get()
    assert again.owner == alice and again.connection_id == fork.connection_id and again.copy is None
    assert again.request_count == 2 and again.remote_id.startswith("batch_") and again.metadata == {"team": "docs"}
    assert f"Batch {again.remote_id} created with 2 requests." in response.text

    key = local_connection(alice).get_key()  # the file is Alice's key's own
    sent = httpx.get(
        f"{live_server.api_url}/files/{again.input_file_id}/content", headers={"Authorization": f"Bearer {key}"}
    ).text
    assert [line for line in sent.splitlines() if line] and all("local/chat" in line for line in sent.splitlines())
    assert '"max_tokens": 20' in sent and "Say hello in French." in sent
    assert 'data-status="completed"' in wait_for_status(alice_http, again.pk, ("completed",))


def test_only_a_fork_of_ones_own_is_submitted_again(alice_http, alice, bob):
    original = Batch.objects.create(owner=alice, connection=local_connection(alice), remote_id="batch_x")
    assert alice_http.post(f"/batches/{original.pk}/resubmit/").status_code == 404
    bobs = fork_of(bob)
    assert alice_http.post(f"/batches/{bobs.pk}/resubmit/").status_code == 404
    assert Batch.objects.count() == 2
