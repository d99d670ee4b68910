"""The test suite's settings: the project's own, with a fast password hasher and, under pytest-xdist, each worker
process's own data directory, cache keys and channel-layer prefix.

pytest-django exports DJANGO_SETTINGS_MODULE, so the daphne and manage.py processes that tests start use these
too. Django's default hasher spends about 0.3 s of CPU on each password by design; the suite creates a user or
two in nearly every test, which made hashing alone a large share of its run time.

Workers (`make test-fast` runs two) share nothing a test writes: SQLite's test database is named by process id,
pytest-django gives each worker its own PostgreSQL test database, and the lines below keep their files and their
Redis keys apart.
"""

import os

from playground.settings import *  # noqa: F403
from playground.settings import CACHES, CHANNEL_LAYERS, DATA_DIR, REDIS_URL

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if WORKER:
    if DATA_DIR.name != f"worker-{WORKER}":  # a server the worker starts is handed the worker's directory already
        DATA_DIR = DATA_DIR / f"worker-{WORKER}"
    MEDIA_ROOT = DATA_DIR / "media"
    if REDIS_URL:
        CACHES["default"]["KEY_PREFIX"] = f"{CACHES['default'].get('KEY_PREFIX', '')}-{WORKER}"
        CHANNEL_LAYERS["default"]["CONFIG"]["prefix"] = f"asgi-{WORKER}"

# A throwaway feature app that declares a share kind (tests/sharing/test_new_kind.py adds it to SHARE_KINDS).
INSTALLED_APPS = [*INSTALLED_APPS, "tests.sharing.kindapp"]  # noqa: F405

# Pages link static files by their plain names, served from static/ by WhiteNoise's finders, whether or not a
# `make run` collected them into STATIC_ROOT before: the suite never depends on what a developer ran last
# (tests/chat/test_page_assets.py collects into a directory of its own to test the fingerprinted names).
WHITENOISE_USE_FINDERS = True
