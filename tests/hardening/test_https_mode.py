"""PLAYGROUND_HTTPS=true behind a TLS proxy: pages redirect plain HTTP, the Local connection still works."""

import httpx
import pytest
from django.urls import reverse

from playground.chat.models import Conversation, Message
from playground.connections.models import Connection
from tests.conftest import free_port, start_server, stop_server
from tests.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]
CSRF = "abcdefghijklmnopqrstuvwxyz012345"


@pytest.fixture
def https_server(live_server, tmp_path):
    port = free_port()
    process = start_server(port, tmp_path / "https.log", PLAYGROUND_HTTPS="true")
    yield f"127.0.0.1:{port}"
    stop_server(process)


def proxied(host: str, cookie: str) -> dict[str, str]:
    """What the TLS proxy in front adds to a browser's request."""
    return {
        "X-Forwarded-Proto": "https",
        "Cookie": cookie,
        "X-CSRFToken": CSRF,
        "Referer": f"https://{host}/",
        "HX-Request": "true",
    }


def test_https_mode_chats_with_the_local_connection(https_server, client, alice, catalog):
    connection = Connection.objects.get(owner=alice, is_local=True)
    conversation = Conversation.objects.create(owner=alice, connection=connection, model_id="local/chat")
    client.force_login(alice)
    cookie = f"sessionid={client.cookies['sessionid'].value}; csrftoken={CSRF}"
    with httpx.Client(base_url=f"http://{https_server}", timeout=30) as http:
        # Plain HTTP to a page is redirected: HTTPS mode is on.
        assert http.get("/accounts/login/").status_code == 301
        tested = http.post(reverse("connections:test", args=[connection.pk]), headers=proxied(https_server, cookie))
        assert tested.status_code == 200
        assert "Connected" in tested.text and " 0 models" not in tested.text
        sent = http.post(
            reverse("chat:send", args=[conversation.pk]),
            data={"content": "what is 2 + 3?"},
            headers=proxied(https_server, cookie),
        )
        assert sent.status_code == 200, sent.text

    def finished():
        answer = Message.objects.filter(conversation=conversation, role="assistant").first()
        return answer if answer and answer.status != "streaming" else None

    answer = wait_for(finished, timeout=30, what="the answer to finish")
    assert answer.status == "complete", answer.error
    assert "5" in answer.content


def test_the_local_api_is_not_redirected_in_https_mode(https_server, live_server):
    response = httpx.get(
        f"http://{https_server}/local/v1/models", headers={"Authorization": f"Bearer {live_server.api_key}"}
    )
    assert response.status_code == 200
    assert response.json()["data"]
