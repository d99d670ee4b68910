import pytest
from django.urls import reverse

from playground.connections.models import Connection
from tests.factories import add_connection

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("method", "name"),
    [
        ("get", "connections:edit"),
        ("post", "connections:edit"),
        ("post", "connections:delete"),
        ("post", "connections:test"),
        ("get", "catalog:index"),
        ("post", "catalog:refresh"),
    ],
)
def test_another_users_connection_is_a_404(client, alice, bob, method, name):
    connection = add_connection(alice)
    client.force_login(bob)
    response = getattr(client, method)(reverse(name, args=[connection.pk]))
    assert response.status_code == 404
    assert Connection.objects.filter(pk=connection.pk, name="Hosted").exists()


def test_the_list_shows_only_your_connections(client, alice, bob):
    add_connection(alice, name="Alice's provider")
    client.force_login(bob)
    html = client.get(reverse("connections:index")).content.decode()
    assert "Alice&#x27;s provider" not in html and "Alice's provider" not in html
