"""With the local API off and no connection added, the chat page says what to do instead of failing."""

import pytest

from playground.chat.models import Conversation
from playground.connections.models import Connection

pytestmark = pytest.mark.django_db


@pytest.fixture
def local_api_off(settings, alice):
    settings.LOCAL_API = False
    settings.LOCAL_API_KEY_MINTER = ""
    Connection.objects.filter(owner=alice).delete()


def test_the_chat_page_without_any_connection_asks_to_add_one(local_api_off, alice_client):
    response = alice_client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Add a connection first" in html
    assert 'href="/connections/new/"' in html


def test_a_conversation_without_any_connection_shows_the_same_advice(local_api_off, alice, alice_client):
    conversation = Conversation.objects.create(owner=alice)
    response = alice_client.get(f"/c/{conversation.pk}/")
    assert response.status_code == 200
    assert "Add a connection first" in response.content.decode()


def test_sending_without_any_connection_is_refused_in_words_and_saves_nothing(local_api_off, alice, alice_client):
    response = alice_client.post("/c/new/", {"content": "Hello"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert "No connection to send to" in response.content.decode()
    assert not Conversation.objects.filter(owner=alice).exists()

    conversation = Conversation.objects.create(owner=alice)
    response = alice_client.post(f"/c/{conversation.pk}/send/", {"content": "Hello"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert "No connection to send to" in response.content.decode()
    assert not conversation.messages.exists()


def test_with_a_connection_of_their_own_the_page_offers_it(local_api_off, alice, alice_client):
    connection = Connection(owner=alice, name="Hosted", base_url="https://api.example.com/v1")
    connection.set_key("sk-hosted-0123456789")
    connection.save()
    conversation = Conversation.objects.create(owner=alice)
    html = alice_client.get(f"/c/{conversation.pk}/").content.decode()
    assert "Add a connection first" not in html
    assert f'<option value="{connection.pk}" selected>Hosted</option>' in html


@pytest.mark.parametrize("path", ["/connections/", "/rerank/", "/speech/", "/speech/voices/", "/batches/"])
def test_the_other_pages_without_any_connection_open(local_api_off, alice_client, path):
    response = alice_client.get(path)
    assert response.status_code == 200
