"""Export and import round-trip exactly and refuse bad files whole; chat starts from a prompt version (recording
name@vN) and saves its setup as a prompt; a prompt version is a share kind with a fork into one's own library."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from playground.chat.models import Conversation, Message
from playground.prompts import transfer
from playground.prompts.drafts import save_version
from playground.prompts.models import Prompt
from playground.sharing.freeze import freeze, new_share
from playground.sharing.models import Share
from tests.conftest import client_of
from tests.prompts.conftest import draft, make_prompt

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]


def _exported(prompt) -> dict:
    data = transfer.export(prompt)
    data.pop("name")
    return data


def test_export_then_import_is_exact(alice, bob, team):
    prompt = make_prompt(alice, "source", team=team, versions=1, params={"temperature": 0.4, "stop": ["END"]})
    save_version(
        prompt,
        draft(bob, shots=[{"role": "user", "content": "2+2"}, {"role": "assistant", "content": "4"}], template="{{q}}"),
        bob,
    )
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    save_version(
        prompt, draft(alice, model="local/tools", tools=tools, params={"response_format": "json_object"}), alice
    )
    client = client_of(alice)
    client.post(reverse("prompts:label", args=[prompt.pk]), {"label": "production", "version": "2"})
    client.post(reverse("prompts:label", args=[prompt.pk]), {"label": "staging", "version": "3"})
    client.post(reverse("prompts:protect", args=[prompt.pk]), {"label": "production", "protected": "on"})
    exported = client.get(reverse("prompts:export", args=[prompt.pk])).content
    upload = SimpleUploadedFile("p.json", exported, "application/json")
    response = client.post(reverse("prompts:import"), {"file": upload, "name": "copy", "owner": str(team.pk)})
    assert response.status_code == 302
    copy = Prompt.objects.get(name="copy", team=team)
    assert _exported(copy) == _exported(prompt)
    assert json.loads(exported)["labels"][0] == {"name": "production", "version": 2, "protected": True}


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d["versions"][0].update(template="Hi {{x"), "“{{” is not closed"),
        (lambda d: d["versions"][0].update(params={"thinking_budget": 300}), "local/chat does not take this parameter"),
        (lambda d: d["versions"][0].update(template="x" * 100_001), "the limit is 100,000"),
        (lambda d: d["labels"].append({"name": "production", "version": 7}), "must name a version of the file"),
        (lambda d: d.update(name="summary"), "already a prompt in your prompts"),
        (lambda d: d["versions"][0].update(system="a\u0000b"), "NUL characters"),
    ],
)
def test_a_bad_import_says_why_and_saves_nothing(alice, change, words):
    prompt = make_prompt(alice, "summary")
    data = transfer.export(prompt)
    data["name"] = "imported"
    change(data)
    client = client_of(alice)
    upload = SimpleUploadedFile("p.json", json.dumps(data).encode(), "application/json")
    response = client.post(reverse("prompts:import"), {"file": upload}, follow=True)
    assert words in response.content.decode()
    assert Prompt.objects.count() == 1


def test_a_new_chat_from_a_prompt_records_its_version(alice):
    prompt = make_prompt(
        alice, "summary", shots=[{"role": "user", "content": "Hi {{topic}}"}, {"role": "assistant", "content": "Hello"}]
    )
    version = prompt.versions.get()
    client = client_of(alice)
    page = client.get(reverse("chat:from-prompt", args=[version.pk])).content.decode()
    assert 'name="var_topic"' in page and 'name="var_n"' in page
    response = client.post(reverse("chat:from-prompt", args=[version.pk]), {"var_topic": "cats"})
    assert response.status_code == 400 and "n has no value" in response.content.decode()
    assert not Conversation.objects.exists()
    response = client.post(reverse("chat:from-prompt", args=[version.pk]), {"var_topic": "cats", "var_n": "5"})
    conversation = Conversation.objects.get()
    assert response.status_code == 302 and response.url == reverse("chat:conversation", args=[conversation.pk])
    assert conversation.prompt_version == version and conversation.prompt_ref == "summary@v1"
    assert conversation.system_prompt == "You are terse." and conversation.model_id == "local/chat"
    contents = list(Message.objects.filter(conversation=conversation, role="user").values_list("content", flat=True))
    assert contents[:2] == ["Hi cats", "Summarise cats in 5 words."]
    assert "summary@v1" in client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()


def test_a_conversations_setup_saves_as_a_prompt_and_as_a_new_version(alice):
    connection = alice.connections.get(is_local=True)
    conversation = Conversation.objects.create(
        owner=alice,
        connection=connection,
        model_id="local/chat",
        system_prompt="Be brief.",
        params={"temperature": 0.5, "top_p": None, "stream": True},
    )
    question = Message.objects.create(conversation=conversation, role="user", content="What is {{thing}}?")
    client = client_of(alice)
    url = reverse("chat:save-prompt", args=[conversation.pk])
    response = client.post(url, {"name": "from-chat", "template": str(question.pk), "target": ""})
    assert response.status_code == 302
    prompt = Prompt.objects.get(name="from-chat")
    version = prompt.versions.get()
    assert version.system == "Be brief." and version.template == "What is {{thing}}?"
    assert version.params == {"temperature": 0.5, "stream": True} and version.values["temperature"] == 0.5
    client.post(url, {"target": str(prompt.pk), "template": str(question.pk), "message": "again"})
    assert prompt.versions.count() == 2 and prompt.versions.get(number=2).message == "again"
    response = client.post(url, {"name": "from-chat", "template": str(question.pk), "target": ""})
    assert response.status_code == 400 and "already a prompt" in response.content.decode()


def test_a_prompt_version_is_shared_read_only_with_its_diff_and_forked(alice, bob):
    prompt = make_prompt(alice, "summary", versions=1)
    save_version(prompt, draft(alice, template="Summarise {{topic}} briefly."), alice)
    version = prompt.versions.get(number=2)
    share = new_share(alice, version, visibility=Share.ANYONE)
    share.save()
    freeze(share)
    client = client_of(bob)
    page = client.get(f"/s/{share.token}").content.decode()
    assert "summary@v2" in page and "added: </span>Summarise {{topic}} briefly." in page
    response = client.post(f"/s/{share.token}/fork/", {"connection": bob.connections.get(is_local=True).pk})
    assert response.status_code == 302
    fork = Prompt.objects.get(owner=bob)
    assert fork.name == "summary" and fork.versions.get().template == "Summarise {{topic}} briefly."
    assert prompt.versions.count() == 2  # the original is untouched


def test_view_code_shows_the_compiled_request_and_the_fetch_by_label(alice):
    prompt = make_prompt(alice, "summary", params={"temperature": 0.2})
    version = prompt.versions.get()
    page = client_of(alice).get(reverse("sharing:code", args=["prompt", version.pk])).content.decode()
    assert "Summarise &lt;topic&gt; in &lt;n&gt; words." in page
    assert "/api/prompts/summary?label=production&amp;topic=%3Ctopic%3E" in page
    assert client_of(alice).get(reverse("sharing:code", args=["prompt", version.pk])).status_code == 200
