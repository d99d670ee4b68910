"""Adding a connection to an OpenAI-style provider and refreshing its catalog, through the pages."""

import re

import pytest

from playground.catalog.models import CatalogModel
from playground.connections.models import Connection
from tests.fakeprovider import server as fake

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def added(live_server, catalog, alice, alice_http, fake_openai) -> Connection:
    """The fake added through the Connections form (the operator's allow-list lets 127.0.0.1 through)."""
    response = alice_http.post(
        "/connections/new/", data={"name": "Fake OpenAI", "base_url": fake_openai.base_url, "api_key": fake_openai.key}
    )
    assert response.status_code == 302, response.text[:3000]
    return Connection.objects.get(owner=alice, name="Fake OpenAI")


def refresh(alice_http, connection: Connection) -> str:
    response = alice_http.post(f"/catalog/{connection.pk}/refresh/", follow_redirects=True)
    assert response.status_code == 200
    return response.text


def test_the_connection_works_and_never_shows_its_key(added, alice_http, fake_openai):
    assert added.get_key() == fake_openai.key and fake_openai.key not in added.encrypted_key
    page = alice_http.post(f"/connections/{added.pk}/test/").text
    added.refresh_from_db()
    assert added.last_test_ok and added.last_test_message == "Connected: the key works and 5 models are listed."
    assert fake_openai.key not in page and fake_openai.key not in alice_http.get("/connections/").text


def test_a_new_connection_arrives_with_what_its_provider_lists(added, alice_http):
    assert set(CatalogModel.objects.filter(connection=added).values_list("model_id", flat=True)) == set(fake.MODELS)
    assert "5 models listed by the provider" in alice_http.get("/connections/").text


def test_a_new_connection_whose_provider_refuses_says_so(live_server, catalog, alice, alice_http, fake_openai):
    response = alice_http.post(
        "/connections/new/", data={"name": "Wrong", "base_url": fake_openai.base_url, "api_key": "sk-wrong"}
    )
    assert response.status_code == 302
    page = alice_http.get("/connections/").text
    assert "flash-warning" in page and "Could not refresh: API key rejected." in page
    assert not CatalogModel.objects.filter(connection__name="Wrong").exists()


def test_a_refresh_lists_what_the_provider_serves(added, alice_http):
    page = refresh(alice_http, added)
    assert "5 models" in page
    listed = set(re.findall(r"<td><code>([^<]+)</code>", page))
    assert set(fake.MODELS) <= listed
    kinds = dict(CatalogModel.objects.filter(connection=added).values_list("model_id", "kind"))
    assert kinds[fake.RERANK_MODEL] == "rerank" and kinds[fake.SPEECH_MODEL] == "speech"
    assert kinds[fake.CHAT_MODEL] == "chat"


def test_the_catalog_holds_nothing_the_provider_does_not_list(added, alice_http):
    page = refresh(alice_http, added)
    listed = set(re.findall(r"<td><code>([^<]+)</code>", page))
    assert listed == set(fake.MODELS)
    chat = {m.model_id for m in CatalogModel.objects.for_connection(added, kind="chat")}
    assert chat == {fake.CHAT_MODEL, fake.TOOLS_MODEL}


def test_a_wrong_key_is_reported_in_words(live_server, catalog, alice, alice_http, fake_openai):
    alice_http.post(
        "/connections/new/", data={"name": "Wrong", "base_url": fake_openai.base_url, "api_key": "sk-wrong"}
    )
    connection = Connection.objects.get(owner=alice, name="Wrong")
    alice_http.post(f"/connections/{connection.pk}/test/")
    connection.refresh_from_db()
    assert not connection.last_test_ok and connection.last_test_message == "Key rejected (401): check the API key."
    assert "Could not refresh: API key rejected." in refresh(alice_http, connection)
