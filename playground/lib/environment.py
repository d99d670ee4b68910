"""What the settings read of the machine they run on: variables of the environment, secrets generated once for local
runs and kept beside the project, and whether the static files were collected since they last changed. Imported by
settings.py before Django is configured: nothing here imports Django."""

import os
from pathlib import Path


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def persisted_secret(path: Path, make) -> str:
    """A secret generated once for local runs and kept in an ignored file (`path`) beside the project."""
    if not path.exists():
        path.write_text(make())
        path.chmod(0o600)
    return path.read_text().strip()


def collected(source: Path, root: Path) -> bool:
    """Whether `collectstatic` copied every file of `source` into `root` since it last changed."""
    for folder, _, names in os.walk(source):
        for name in names:
            path = Path(folder) / name
            copy = root / path.relative_to(source)
            try:
                if copy.stat().st_mtime < path.stat().st_mtime:
                    return False
            except FileNotFoundError:
                return False
    return True
