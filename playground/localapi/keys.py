"""API keys of the local API.

`LOCAL_API_KEYS` wins; without it one key is generated on first use and kept in the ApiKey table, so a
fresh install works with no configuration (`manage.py localapi_key` prints it).
"""

import hashlib
import hmac
import secrets

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import IntegrityError

from playground.localapi.models import ApiKey

_generated: list[str] = []


def valid_keys() -> list[str]:
    if settings.LOCAL_API_KEYS:
        return list(settings.LOCAL_API_KEYS)
    if not _generated:
        key = ApiKey.objects.order_by("id").values_list("key", flat=True).first()
        if key is None:
            try:
                key = ApiKey.objects.create(key="sk-local-" + secrets.token_hex(24)).key
            except IntegrityError:  # pragma: no cover - two processes racing on first use
                key = ApiKey.objects.order_by("id").values_list("key", flat=True).first()
        # Keep the first key created by any process: every process then agrees on it.
        _generated[:] = [ApiKey.objects.order_by("id").values_list("key", flat=True).first() or key]
    return list(_generated)


def needs_database() -> bool:
    """Whether `valid_keys()` would query the database (only until the generated key is cached)."""
    return not settings.LOCAL_API_KEYS and not _generated


def default_key() -> str:
    return valid_keys()[0]


def is_valid(key: str) -> bool:
    # Compare against every key so the time taken does not reveal which one matched.
    matches = [hmac.compare_digest(key.encode(), k.encode()) for k in valid_keys()]
    return any(matches)


def owner_of(key: str) -> str:
    """What the local API records as the owner of a resource: never the key itself."""
    return hashlib.sha256(key.encode()).hexdigest()


avalid_keys = sync_to_async(valid_keys)
adefault_key = sync_to_async(default_key)
