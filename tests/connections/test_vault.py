import pytest
from cryptography.fernet import Fernet, InvalidToken
from django.db import connection as db
from django.urls import reverse

from playground.connections import crypto
from playground.connections.models import Connection
from tests.factories import SECRET, add_connection

pytestmark = pytest.mark.django_db


def test_the_key_is_not_stored_in_clear(alice):
    connection = add_connection(alice)
    with db.cursor() as cursor:
        cursor.execute("SELECT encrypted_key, key_hint FROM connections_connection WHERE id = %s", [connection.pk])
        stored, hint = cursor.fetchone()
    assert SECRET not in stored
    assert "abcdefghijklmnop" not in stored and "abcdefghijklmnop" not in hint
    assert hint == "sk-…1234"
    assert Connection.objects.get(pk=connection.pk).get_key() == SECRET


def test_a_key_encrypted_under_an_old_key_still_decrypts_after_rotation(alice, settings):
    old = Fernet.generate_key().decode()
    settings.ENCRYPTION_KEYS = [old]
    connection = add_connection(alice)
    settings.ENCRYPTION_KEYS = [Fernet.generate_key().decode(), old]
    connection.refresh_from_db()
    assert connection.get_key() == SECRET
    rotated = crypto.rotate(connection.encrypted_key)
    settings.ENCRYPTION_KEYS = settings.ENCRYPTION_KEYS[:1]
    assert crypto.decrypt(rotated) == SECRET


def test_a_wrong_encryption_key_fails_loudly(alice, settings):
    connection = add_connection(alice)
    settings.ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    connection.refresh_from_db()
    with pytest.raises(InvalidToken):
        connection.get_key()


def test_pages_show_the_key_only_masked(alice_client, alice):
    add_connection(alice)
    html = alice_client.get(reverse("connections:index")).content.decode()
    assert "sk-…1234" in html
    assert SECRET not in html


def test_add_a_connection_through_the_form(alice_client, alice, settings):
    settings.ALLOWED_UPSTREAM_HOSTS = ["api.example.com"]
    response = alice_client.post(
        reverse("connections:create"),
        {"name": "Hosted", "base_url": "https://api.example.com/v1/", "api_key": SECRET},
    )
    assert response.status_code == 302
    connection = Connection.objects.get(owner=alice, is_local=False)
    assert connection.base_url == "https://api.example.com/v1"
    assert connection.get_key() == SECRET
    edit_page = alice_client.get(reverse("connections:edit", args=[connection.pk])).content.decode()
    assert SECRET not in edit_page


def test_editing_without_a_key_keeps_the_current_key(alice_client, alice, settings):
    settings.ALLOWED_UPSTREAM_HOSTS = ["api.example.com"]
    connection = add_connection(alice)
    alice_client.post(
        reverse("connections:edit", args=[connection.pk]),
        {"name": "Renamed", "base_url": "https://api.example.com/v1", "api_key": ""},
    )
    connection.refresh_from_db()
    assert connection.name == "Renamed" and connection.get_key() == SECRET


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("https://api.example.com", "must end in /v1"),
        ("ftp://api.example.com/v1", "http:// or https://"),
        ("http://127.0.0.1:5432/v1", "not allowed"),
        ("http://169.254.169.254/v1", "not allowed"),
        ("http://10.0.0.8/v1", "not allowed"),
        ("http://[::1]/v1", "not allowed"),
    ],
)
def test_base_urls_to_internal_addresses_are_refused(alice_client, settings, url, error):
    settings.ALLOWED_UPSTREAM_HOSTS = []
    response = alice_client.post(reverse("connections:create"), {"name": "x", "base_url": url, "api_key": "k"})
    assert response.status_code == 200
    assert error in response.content.decode()


def test_the_admin_setting_limits_hosts(alice_client, settings):
    settings.ALLOWED_UPSTREAM_HOSTS = ["*.example.org"]
    response = alice_client.post(
        reverse("connections:create"), {"name": "x", "base_url": "https://api.example.com/v1", "api_key": "k"}
    )
    assert "not in PLAYGROUND_ALLOWED_UPSTREAM_HOSTS" in response.content.decode()


@pytest.mark.needs_local_api
def test_the_local_connection_cannot_be_deleted(alice_client, alice):
    local = Connection.objects.get(owner=alice, is_local=True)
    assert alice_client.post(reverse("connections:delete", args=[local.pk])).status_code == 400
    assert Connection.objects.filter(pk=local.pk).exists()
