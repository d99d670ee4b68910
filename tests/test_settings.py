import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.spawns
def test_check_deploy_passes_with_production_settings():
    env = {
        **os.environ,
        "SECRET_KEY": "x" * 64 + "production-secret-from-the-environment",
        "PLAYGROUND_HTTPS": "true",
        "ALLOWED_HOSTS": "playground.example.com",
        "DJANGO_DEBUG": "false",
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # never inherited from a developer's shell
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_debug_is_off_unless_asked_for():
    from django.conf import settings

    assert settings.DEBUG is False
