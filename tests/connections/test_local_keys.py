"""Each account's Local connection has its own local API key: minted at sign-up or by the data migration,
stored encrypted in the connection and hashed in the local API, rotatable from the connections page."""

import hashlib
import importlib

import httpx
import pytest
from django.apps import apps
from django.core.management import call_command
from django.urls import reverse

from playground.connections.models import Connection
from playground.localapi import keys
from playground.localapi.models import ApiKey

pytestmark = pytest.mark.django_db

migration = importlib.import_module("playground.connections.migrations.0002_local_connection_keys")


def local_of(user) -> Connection:
    return Connection.objects.get(owner=user, is_local=True)


def stored_key_texts() -> str:
    return " ".join(f"{row.digest} {row.owner} {row.label}" for row in ApiKey.objects.all())


def test_every_account_gets_its_own_key_stored_encrypted_and_hashed(alice, bob):
    alice_key, bob_key = local_of(alice).get_key(), local_of(bob).get_key()
    assert alice_key.startswith("sk-local-") and bob_key.startswith("sk-local-") and alice_key != bob_key
    for user, raw in ((alice, alice_key), (bob, bob_key)):
        connection = local_of(user)
        assert raw not in connection.encrypted_key
        assert connection.masked_key == f"sk-…{raw[-4:]}"
        assert ApiKey.objects.filter(digest=hashlib.sha256(raw.encode()).hexdigest()).exists()
        assert keys.owner_for(raw) is not None
    assert keys.owner_for(alice_key) != keys.owner_for(bob_key)
    # The local API never stores a key itself.
    assert alice_key not in stored_key_texts() and bob_key not in stored_key_texts()


def test_the_data_migration_gives_existing_local_connections_distinct_working_keys(alice, bob, django_user_model):
    carol = django_user_model.objects.create_user("carol", "carol@example.com", "x")
    # As before per-user keys: Local connections without a key of their own.
    Connection.objects.filter(owner__in=[alice, bob]).update(encrypted_key="", key_hint="")
    untouched = local_of(carol).encrypted_key

    migration.give_local_connections_their_own_keys(apps, None)

    alice_key, bob_key = local_of(alice).get_key(), local_of(bob).get_key()
    assert alice_key != bob_key
    assert keys.owner_for(alice_key) and keys.owner_for(bob_key)
    assert keys.owner_for(alice_key) != keys.owner_for(bob_key)
    assert local_of(alice).key_hint.endswith(alice_key[-4:])
    assert local_of(carol).encrypted_key == untouched


def test_rotation_replaces_the_key_and_keeps_the_owner(alice):
    connection = local_of(alice)
    old = connection.get_key()
    owner = keys.owner_for(old)
    connection.rotate_key()
    new = local_of(alice).get_key()
    assert new != old
    assert keys.owner_for(old) is None
    assert keys.owner_for(new) == owner


def test_the_rotate_page_asks_first_and_shows_the_new_key_in_full_once(alice_client, alice):
    connection = local_of(alice)
    old = connection.get_key()
    index = alice_client.get(reverse("connections:index")).content.decode()
    assert reverse("connections:rotate_key", args=[connection.pk]) in index and old not in index
    page = alice_client.get(reverse("connections:rotate_key", args=[connection.pk])).content.decode()
    assert "stops working at once" in page and connection.masked_key in page and old not in page
    assert local_of(alice).get_key() == old  # a GET changes nothing

    response = alice_client.post(reverse("connections:rotate_key", args=[connection.pk]))
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    new = local_of(alice).get_key()
    assert new != old and keys.owner_for(old) is None
    assert new in response.content.decode() and old not in response.content.decode()
    index = alice_client.get(reverse("connections:index")).content.decode()
    assert local_of(alice).masked_key in index and new not in index


def test_only_the_local_connections_key_is_rotated_and_only_by_its_owner(alice_client, alice, bob):
    other = Connection(owner=alice, name="Other", base_url="https://api.example.com/v1")
    other.set_key("sk-provider-0123456789")
    other.save()
    assert alice_client.post(reverse("connections:rotate_key", args=[other.pk])).status_code == 400
    bobs = local_of(bob)
    before = bobs.get_key()
    assert alice_client.post(reverse("connections:rotate_key", args=[bobs.pk])).status_code == 404
    assert local_of(bob).get_key() == before


def test_localapi_key_prints_a_new_operator_key_once_and_stores_only_its_hash(capsys, settings):
    settings.LOCAL_API_KEYS = []
    call_command("localapi_key")
    first = capsys.readouterr().out.strip()
    call_command("localapi_key", label="ci")
    second = capsys.readouterr().out.strip()
    assert first.startswith("sk-local-") and second != first
    assert keys.owner_for(first) and keys.owner_for(second)
    assert not keys.owner_for(first + "x")
    assert first not in stored_key_texts()
    assert ApiKey.objects.filter(label="ci").count() == 1


def test_configured_operator_keys_work_without_being_stored(settings):
    settings.LOCAL_API_KEYS = ["sk-operator-one", "sk-operator-two"]
    assert keys.owner_for("sk-operator-two") == hashlib.sha256(b"sk-operator-two").hexdigest()
    assert keys.owner_for("sk-operator") is None
    assert not ApiKey.objects.exists()


def test_a_rotated_key_is_refused_by_the_live_local_api(live_server, alice):
    connection = local_of(alice)
    old = connection.get_key()
    url = f"{live_server.api_url}/models"
    assert httpx.get(url, headers={"Authorization": f"Bearer {old}"}).status_code == 200
    connection.rotate_key()
    assert httpx.get(url, headers={"Authorization": f"Bearer {old}"}).status_code == 401
    new = local_of(alice).get_key()
    assert httpx.get(url, headers={"Authorization": f"Bearer {new}"}).status_code == 200
    # The operator key of the live server keeps working beside the users' keys.
    assert httpx.get(url, headers={"Authorization": f"Bearer {live_server.api_key}"}).status_code == 200
