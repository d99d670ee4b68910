"""A changed encryption key is caught by `manage.py check` and at boot, pages say so, and keys can be rotated."""

import io
import os
import subprocess
import sys

import pytest
from cryptography.fernet import Fernet
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse

from playground.connections.models import Connection
from tests.conftest import database_url

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def stored(alice):
    connection = Connection(owner=alice, name="Hosted", base_url="https://api.example.com/v1")
    connection.set_key("sk-hosted-secret-123456")
    connection.save()
    return connection


def run(args: list[str], keys: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": database_url(), "PLAYGROUND_ENCRYPTION_KEYS": keys}
    env["PLAYGROUND_BOOT_CHECKS"] = "on"
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=120, cwd=settings.BASE_DIR
    )


@pytest.mark.spawns
def test_manage_check_names_the_setting_and_the_rotation_when_the_key_changed(stored):
    result = run(["manage.py", "check"], Fernet.generate_key().decode())
    assert result.returncode != 0
    output = result.stdout + result.stderr
    count = Connection.objects.exclude(encrypted_key="").count()  # the hosted key and alice's own Local key
    assert "connections.E001" in output and f"{count} of {count} stored API keys" in output
    assert "PLAYGROUND_ENCRYPTION_KEYS" in output and "rotate_encryption_key --old=" in output
    good = run(["manage.py", "check"], ",".join(settings.ENCRYPTION_KEYS))
    assert good.returncode == 0, good.stderr


@pytest.mark.spawns
def test_the_server_refuses_to_start_with_words(stored):
    result = run(["-c", "import playground.asgi"], Fernet.generate_key().decode())
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "cannot be decrypted" in result.stderr and "PLAYGROUND_ENCRYPTION_KEYS" in result.stderr


def test_a_page_that_needs_the_key_says_what_happened(client, alice, stored, settings):
    client.force_login(alice)
    settings.ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    response = client.post(reverse("connections:test", args=[stored.pk]))
    assert response.status_code == 503
    page = response.content.decode()
    assert "Stored API keys cannot be read" in page and "rotate_encryption_key" in page
    htmx = client.post(reverse("connections:test", args=[stored.pk]), headers={"HX-Request": "true"})
    assert htmx.status_code == 200 and htmx["HX-Retarget"] == "#main"
    assert "Stored API keys cannot be read" in htmx.content.decode()


def test_rotation_re_encrypts_every_stored_key(stored, settings):
    old = settings.ENCRYPTION_KEYS[0]
    new = Fernet.generate_key().decode()
    out = io.StringIO()
    call_command("rotate_encryption_key", f"--old={old}", f"--new={new}", stdout=out)
    assert f"Re-encrypted {Connection.objects.exclude(encrypted_key='').count()} stored API keys" in out.getvalue()
    settings.ENCRYPTION_KEYS = [new]
    stored.refresh_from_db()
    assert stored.get_key() == "sk-hosted-secret-123456"


def test_rotation_with_a_wrong_old_key_changes_nothing(stored, settings):
    before = Connection.objects.get(pk=stored.pk).encrypted_key
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="cannot be decrypted with the --old keys"):
        call_command(
            "rotate_encryption_key",
            f"--old={Fernet.generate_key().decode()}",
            f"--new={Fernet.generate_key().decode()}",
        )
    assert Connection.objects.get(pk=stored.pk).encrypted_key == before
