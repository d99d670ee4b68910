import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from playground.connections.models import Connection
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.mark.needs_local_api
def test_sign_up_logs_the_user_in_and_gives_them_the_local_connection(client):
    response = client.post(
        reverse("accounts:signup"),
        {"username": "carol", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302
    user = get_user_model().objects.get(username="carol")
    assert client.session["_auth_user_id"] == str(user.pk)
    local = Connection.objects.get(owner=user)
    assert local.is_local and local.name == "Local"


def test_sign_up_errors_name_the_problem(client):
    response = client.post(reverse("accounts:signup"), {"username": "carol", "password1": "x", "password2": "y"})
    assert response.status_code == 200
    assert "password fields didn’t match" in response.content.decode()


@pytest.mark.parametrize(
    "name", ["chat:index", "connections:index", "connections:create", "rerank:index", "speech:index", "batches:index"]
)
def test_every_page_requires_login(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response.url.startswith(reverse("accounts:login"))


@pytest.mark.parametrize("name", ["accounts:login", "accounts:signup"])
def test_login_and_sign_up_are_public(client, name):
    assert client.get(reverse(name)).status_code == 200


def test_login_and_logout(client, alice):
    response = client.post(reverse("accounts:login"), {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert client.get(reverse("connections:index")).status_code == 200
    client.post(reverse("accounts:logout"))
    assert client.get(reverse("connections:index")).status_code == 302


def test_change_password(alice_client, alice):
    response = alice_client.post(
        reverse("accounts:password_change"),
        {
            "old_password": PASSWORD,
            "new_password1": "another-long-passphrase",
            "new_password2": "another-long-passphrase",
        },
    )
    assert response.status_code == 302
    alice.refresh_from_db()
    assert alice.check_password("another-long-passphrase")


def test_admin_is_for_staff_only(alice_client, alice):
    assert alice_client.get("/admin/").status_code == 302
    alice.is_staff = alice.is_superuser = True
    alice.save()
    assert alice_client.get("/admin/").status_code == 200
