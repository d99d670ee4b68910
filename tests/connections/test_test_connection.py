import pytest
from django.urls import reverse

from playground.catalog.models import CatalogModel
from playground.connections.models import Connection
from tests.conftest import free_port
from tests.factories import add_connection

pytestmark = pytest.mark.django_db(transaction=True)


def run_test(client, connection):
    response = client.post(reverse("connections:test", args=[connection.pk]), headers={"HX-Request": "true"})
    assert response.status_code == 200
    connection.refresh_from_db()
    return connection, response.content.decode()


@pytest.mark.needs_local_api
def test_the_local_connection_works_out_of_the_box(live_server, alice_client, alice):
    connection, html = run_test(alice_client, Connection.objects.get(owner=alice, is_local=True))
    assert connection.last_test_ok is True
    assert "Connected" in html and "models are listed" in html


@pytest.mark.needs_local_api
def test_a_wrong_key_is_reported_as_rejected(live_server, alice_client, alice):
    connection = add_connection(alice, key="sk-wrong-key-000000", url=live_server.api_url)
    connection, html = run_test(alice_client, connection)
    assert connection.last_test_ok is False
    assert "Key rejected (401)" in html


def test_an_unreachable_address_is_reported_in_words(live_server, alice_client, alice):
    connection = add_connection(alice, url=f"http://127.0.0.1:{free_port()}/v1")
    connection, html = run_test(alice_client, connection)
    assert connection.last_test_ok is False
    assert "Cannot reach the provider" in html


@pytest.mark.needs_local_api
def test_a_second_connection_with_the_right_key_works(live_server, alice_client, alice):
    connection = add_connection(alice, key=live_server.api_key, url=live_server.api_url)
    connection, _ = run_test(alice_client, connection)
    assert connection.last_test_ok is True


@pytest.mark.needs_local_api
def test_the_catalog_refreshes_from_the_providers_model_list(live_server, alice_client, alice):
    connection = add_connection(alice, key=live_server.api_key, url=live_server.api_url)
    response = alice_client.post(reverse("catalog:refresh", args=[connection.pk]))
    assert response.status_code == 302
    own = CatalogModel.objects.filter(connection=connection)
    assert own.filter(model_id="local/chat", kind="chat").exists()
    reranker = own.get(model_id="local/reranker-instruct")
    assert reranker.kind == "rerank" and reranker.rerank_instruction
    html = alice_client.get(reverse("catalog:index", args=[connection.pk])).content.decode()
    assert "local/reasoner" in html
