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


def test_collected_static_files_are_served_only_while_they_are_current(tmp_path):
    """WhiteNoise serves STATIC_ROOT (with its gzip copies) only when collectstatic copied every file since it
    last changed; otherwise straight from static/, so a changed script is never served stale."""
    from playground.settings import collected

    source, root = tmp_path / "static", tmp_path / "root"
    (source / "js").mkdir(parents=True)
    (source / "js" / "a.js").write_text("a")
    assert not collected(source, root)  # nothing collected
    (root / "js").mkdir(parents=True)
    (root / "js" / "a.js").write_text("a")
    assert collected(source, root)
    os.utime(source / "js" / "a.js", (os.path.getmtime(root / "js" / "a.js") + 5,) * 2)
    assert not collected(source, root)  # changed since
