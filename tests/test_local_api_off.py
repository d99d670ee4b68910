"""With LOCAL_API=off the playground runs without its local API: no /local/v1, no Local connection, and sign-up
still works. Checked in a subprocess (settings decide INSTALLED_APPS at import), on a fresh SQLite database."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

SCRIPT = """
from django.apps import apps
from django.contrib.auth import get_user_model
from django.test import Client
from playground.connections.models import Connection

assert not apps.is_installed("playground.localapi")
client = Client()
password = "correct-horse-battery-staple"
response = client.post("/accounts/signup/", {"username": "carol", "password1": password, "password2": password})
assert response.status_code == 302, response.status_code
carol = get_user_model().objects.get(username="carol")
assert not Connection.objects.filter(owner=carol).exists()
assert client.get("/connections/").status_code == 200
assert client.get("/local/v1/models").status_code in (302, 404)
print("LOCAL-API-OFF-OK")
"""


def manage(*args: str, env: dict) -> subprocess.CompletedProcess:
    root = Path(settings.BASE_DIR)
    return subprocess.run(
        [sys.executable, str(root / "manage.py"), *args], env=env, cwd=root, capture_output=True, text=True, timeout=300
    )


@pytest.mark.spawns
def test_sign_up_works_and_no_local_connection_exists_with_the_local_api_off(tmp_path):
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}
    env.update(
        LOCAL_API="off",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        PLAYGROUND_DATA_DIR=str(tmp_path),
        ALLOWED_HOSTS="testserver",
    )
    for args in (("check",), ("migrate", "-v0")):
        result = manage(*args, env=env)
        assert result.returncode == 0, result.stderr
    result = manage("shell", "-c", SCRIPT, env=env)
    assert result.returncode == 0, result.stderr
    assert "LOCAL-API-OFF-OK" in result.stdout
