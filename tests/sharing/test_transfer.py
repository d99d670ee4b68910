"""Export a conversation as JSON or Markdown and import it back; bad input names the field or line and the limit."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from playground.chat.models import Attachment, Conversation, Message
from playground.chat.sharing import transfer
from tests.sharing.conftest import AUDIO

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]

FIELDS = ["role", "content", "reasoning", "status", "model_id", "params", "usage", "finish_reason", "choices"]


def shape(conversation: Conversation) -> dict:
    messages = []
    for message in conversation.messages.prefetch_related("attachments"):
        row = {name: getattr(message, name) for name in FIELDS}
        row["tool_calls"] = message.tool_calls
        row["files"] = [(a.name, a.kind, a.content_type, a.read()) for a in message.attachments.all()]
        messages.append(row)
    settings = {k: getattr(conversation, k) for k in ("system_prompt", "model_id", "params", "context_policy")}
    return {"title": conversation.title, **settings, "messages": messages}


def test_export_then_import_recreates_the_conversation_branches_and_files(alice_client, alice, conversation):
    answer = conversation.messages.get(role="assistant")
    answer.choices = ["A second take on the tides.", "A third one."]
    answer.reasoning = "Think about the bulges."
    answer.save()
    conversation.params = {**conversation.params, "tools": [{"type": "function", "function": {"name": "f"}}]}
    conversation.save()
    exported = alice_client.get(reverse("sharing:export", args=[conversation.pk, "json"]))
    assert exported["Content-Disposition"] == 'attachment; filename="tides-and-the-moon.json"'
    data = json.loads(exported.content)
    assert data["messages"][0]["content"][1]["audio_url"]["url"].startswith("data:audio/wav;base64,")
    assert data["messages"][1]["playground"]["branches"] == answer.choices

    upload = SimpleUploadedFile("tides.json", exported.content, content_type="application/json")
    response = alice_client.post(reverse("sharing:import"), {"file": upload})
    copy = Conversation.objects.exclude(pk=conversation.pk).get(owner=alice)
    assert response["Location"] == reverse("chat:conversation", args=[copy.pk])
    assert shape(copy) == shape(conversation)
    for attachment in Attachment.objects.filter(message__conversation=copy):
        attachment.file.storage.delete(attachment.file.name)


def test_markdown_export_reads_as_a_transcript(alice_client, conversation):
    response = alice_client.get(reverse("sharing:export", args=[conversation.pk, "md"]))
    text = response.content.decode()
    assert text.startswith("# Tides and the moon\n")
    assert "## System\n\nYou are a careful physics tutor." in text
    assert "## User\n\nWhy are there two tides a day?" in text
    assert "## Assistant · local/chat\n\nBecause **the Earth** rotates under two bulges." in text
    assert "- Attachment: tone.wav (audio/wav, 10 KB)" in text


def test_a_pasted_openai_messages_array_imports(alice_client, alice, catalog):
    pasted = json.dumps(
        [
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "4"},
        ]
    )
    alice_client.post(reverse("sharing:import"), {"text": pasted})
    copy = Conversation.objects.get(owner=alice)
    assert copy.system_prompt == "Be terse." and copy.title == "What is 2+2?"
    assert [(m.role, m.content) for m in copy.messages.all()] == [("user", "What is 2+2?"), ("assistant", "4")]
    assert copy.connection.is_local


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"messages": [\n  {"role": "user",\n  "content": "x",,}\n]}', "line 3, column 18: not valid JSON"),
        ('{"messages": []}', "messages: expected a non-empty array of messages."),
        ('[{"role": "wizard", "content": "x"}]', "messages[0].role: must be one of system, user, assistant, tool"),
        ('[{"role": "user", "content": 5}]', "messages[0].content: expected a string or an array of content parts."),
        (
            '[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://10.0.0.1/a.png"}}]}]',
            "messages[0].content[0]: expected a base64 data URI (links to other addresses are not fetched).",
        ),
        (
            '[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@"}}]}]',
            "messages[0].content[0]: the data URI is not valid base64.",
        ),
        ('"hello"', "file: expected a JSON object with messages, or an array of messages."),
    ],
)
def test_bad_imports_name_the_field_or_line(alice_client, alice, text, error):
    response = alice_client.post(reverse("sharing:import"), {"text": text})
    assert response.status_code == 200
    assert error in response.content.decode().replace("&#x27;", "'").replace("&quot;", '"')
    assert not Conversation.objects.filter(owner=alice).exists()


def test_import_limits_are_named(alice_client, alice, monkeypatch):
    too_many = json.dumps([{"role": "user", "content": "x"}] * (transfer.MAX_MESSAGES + 1))
    page = alice_client.post(reverse("sharing:import"), {"text": too_many}).content.decode()
    assert f"messages: {transfer.MAX_MESSAGES + 1} messages; the limit is {transfer.MAX_MESSAGES}." in page
    monkeypatch.setattr(transfer, "MAX_IMPORT_BYTES", 100)
    monkeypatch.setattr(transfer, "MAX_IMPORT_MB", 0.0001)
    big = SimpleUploadedFile("big.json", b"[" + b" " * 200 + b"]", content_type="application/json")
    page = alice_client.post(reverse("sharing:import"), {"file": big}).content.decode()
    assert "file: over the limit of 0.0001 MB." in page
    assert (
        "file: choose a JSON file, or paste JSON below."
        in alice_client.post(reverse("sharing:import")).content.decode()
    )


def test_another_users_conversation_does_not_export(bob_client, conversation):
    assert bob_client.get(reverse("sharing:export", args=[conversation.pk, "json"])).status_code == 404
    assert bob_client.get(reverse("sharing:export", args=[conversation.pk, "md"])).status_code == 404


def test_a_streaming_answer_is_not_exported(alice_client, conversation):
    Message.objects.create(conversation=conversation, role="assistant", status=Message.STREAMING, content="hal")
    data = json.loads(alice_client.get(reverse("sharing:export", args=[conversation.pk, "json"])).content)
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"]
    assert AUDIO  # the fixture's attachment is exported above
