"""Improve this prompt: the judge's draft goes through the gate, is shown as a diff, and becomes a new version only
when accepted; a bad draft saves nothing; another user's prompt is a 404."""

import json
from types import SimpleNamespace

import pytest
from django.urls import reverse

from playground.connections import gate
from tests.conftest import client_of
from tests.prompts.conftest import make_prompt

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


@pytest.fixture
def judge(monkeypatch):
    sent, opened = [], []
    real = gate.opened

    def opened_spy(connection, user, purpose, **kwargs):
        opened.append((connection.pk, purpose))
        return real(connection, user, purpose, **kwargs)

    async def chat(endpoint, body):
        sent.append(body)
        reply = json.dumps({"system": "Be brief.", "template": "Summarise {{topic}} in {{n}} words, as JSON."})
        return SimpleNamespace(data={"choices": [{"message": {"content": reply}}], "usage": {"prompt_tokens": 5}})

    monkeypatch.setattr("playground.prompts.improve.client.chat", chat)
    monkeypatch.setattr("playground.prompts.improve.gate.opened", opened_spy)
    return SimpleNamespace(sent=sent, opened=opened)


def test_a_judges_draft_is_a_diff_until_accepted_as_a_new_version(alice, judge):
    prompt = make_prompt(alice, "summary")
    client = client_of(alice)
    url = reverse("prompts:improve", args=[prompt.pk])
    assert client.get(url).status_code == 200
    connection = alice.connections.get(is_local=True)
    page = client.post(url, {"connection": connection.pk, "model": "local/chat", "instruction": "answer in JSON"})
    text = page.content.decode()
    assert page.status_code == 200, text
    assert "added: </span>Summarise {{topic}} in {{n}} words, as JSON." in text
    assert judge.opened == [(connection.pk, "chat")] and "answer in JSON" in judge.sent[0]["messages"][1]["content"]
    assert prompt.versions.count() == 1  # nothing saved before it is accepted
    accepted = client.post(
        reverse("prompts:improve-accept", args=[prompt.pk]),
        {
            "system": "Be brief.",
            "template": "Summarise {{topic}} in {{n}} words, as JSON.",
            "instruction": "answer in JSON",
        },
    )
    assert accepted.status_code == 302
    v1, v2 = prompt.versions.get(number=1), prompt.versions.get(number=2)
    assert v1.template == "Summarise {{topic}} in {{n}} words." and v2.template.endswith("as JSON.")
    assert v2.message == "Improved: answer in JSON" and v2.params == v1.params


def test_a_bad_draft_saves_nothing_and_another_user_gets_a_404(alice, bob, judge):
    prompt = make_prompt(alice, "summary")
    client = client_of(alice)
    client.post(reverse("prompts:improve-accept", args=[prompt.pk]), {"template": "Hi {{name"})
    assert prompt.versions.count() == 1
    other = client_of(bob)
    assert other.get(reverse("prompts:improve", args=[prompt.pk])).status_code == 404
    assert other.post(reverse("prompts:improve-accept", args=[prompt.pk]), {"template": "x"}).status_code == 404
    assert prompt.versions.count() == 1 and not judge.sent
