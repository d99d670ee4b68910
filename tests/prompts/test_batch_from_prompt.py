"""A batch from a prompt version: each variable row compiled into the version's request, the batch's metadata
recording name@vN; a row missing a variable sends nothing; another user's version is a 404."""

import json

import pytest
from django.urls import reverse

from playground.batches.models import Batch
from tests.conftest import client_of
from tests.prompts.conftest import make_prompt

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


@pytest.fixture
def submitted(monkeypatch):
    calls = []

    async def submit(**kwargs):
        calls.append(kwargs)
        return Batch(owner=kwargs["user"], remote_id="batch_x")

    monkeypatch.setattr("playground.batches.from_prompt.services.submit", submit)
    return calls


def test_each_row_becomes_the_versions_request(alice, submitted):
    prompt = make_prompt(alice, "summary", params={"temperature": 0.2})
    version = prompt.versions.get()
    client = client_of(alice)
    url = reverse("batches:from-prompt", args=[version.pk])
    assert client.get(url).status_code == 200
    data = {
        "connection": alice.connections.get(is_local=True).pk,
        "model": "local/chat",
        "rows": '{"topic": "rivers", "n": 5}\n{"topic": "lakes", "n": 3}',
        "completion_window": "24h",
    }
    response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    (call,) = submitted
    assert call["metadata"] == {"prompt": "summary@v1"}
    assert call["prompt_version"] == version  # the batch records it (Batch.prompt_version)
    lines = [json.loads(line) for line in call["content"].decode().splitlines()]
    assert [line["custom_id"] for line in lines] == ["row-1", "row-2"]
    assert lines[1]["body"]["messages"][-1] == {"role": "user", "content": "Summarise lakes in 3 words."}
    assert lines[0]["body"]["temperature"] == 0.2 and "stream" not in lines[0]["body"]
    csv_rows = data | {"rows": "topic,n\nseas,4"}
    assert client.post(url, csv_rows).status_code == 302
    assert "Summarise seas in 4 words." in submitted[1]["content"].decode()


def test_a_bad_row_sends_nothing_and_another_user_gets_a_404(alice, bob, submitted):
    version = make_prompt(alice, "summary").versions.get()
    url = reverse("batches:from-prompt", args=[version.pk])
    data = {
        "connection": alice.connections.get(is_local=True).pk,
        "model": "local/chat",
        "rows": '{"topic": "rivers"}',
        "completion_window": "24h",
    }
    response = client_of(alice).post(url, data)
    assert response.status_code == 400 and "row 1: variables: n has no value." in response.content.decode()
    assert client_of(bob).get(url).status_code == 404
    assert not submitted
