"""HEAD answers like GET without the body on every file download (it was a 405)."""

import httpx
import pytest
from django.urls import reverse

from playground.chat.models import Attachment, Conversation, Message
from playground.connections.models import Connection

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def test_head_on_a_local_api_file(live_server):
    auth = {"Authorization": f"Bearer {live_server.api_key}"}
    line = b'{"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "local/chat", "messages": [{"role": "user", "content": "hi"}]}}\n'
    uploaded = httpx.post(
        f"{live_server.api_url}/files", headers=auth, data={"purpose": "batch"}, files={"file": ("b.jsonl", line)}
    )
    file_id = uploaded.json()["id"]
    url = f"{live_server.api_url}/files/{file_id}/content"
    head = httpx.head(url, headers=auth)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == str(len(line))
    assert httpx.get(url, headers=auth).content == line


def test_head_on_a_chat_attachment_and_a_batch_download(live_server, alice, alice_http, settings):
    connection = Connection.objects.get(owner=alice, is_local=True)
    conversation = Conversation.objects.create(owner=alice, connection=connection, model_id="local/vision")
    message = Message.objects.create(conversation=conversation, role="user", content="look")
    item = Attachment(message=message, kind="pdf", name="a.pdf", content_type="application/pdf", size=9)
    from django.core.files.base import ContentFile

    item.file.save("a.pdf", ContentFile(b"%PDF-1.4\n"), save=True)
    head = alice_http.head(reverse("chat:attachment", args=[item.pk]))
    assert head.status_code == 200 and head.content == b"" and head.headers["content-length"] == "9"
    # No such batch: a 404, not a 405 (the method is allowed).
    assert alice_http.head(reverse("batches:download", args=[999999, "output"])).status_code == 404
