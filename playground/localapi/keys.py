"""API keys of the local API.

Two kinds of key are accepted:
- operator keys from `LOCAL_API_KEYS`, for external clients (their owner is the sha256 of the key);
- keys stored in the ApiKey table as the sha256 of the key, never the key itself: the per-user keys the
  playground mints through `mint()` (its `LOCAL_API_KEY_MINTER` setting) and operator keys made by
  `manage.py localapi_key`, which prints the new key once.

A stored key's `owner` is the identity its voices, files and batches belong to. Rotation (`mint(replaces=…)`)
gives the new key the old key's owner and deletes the old key, so it stops working at once and nothing the
owner made is lost.
"""

import hashlib
import hmac
import secrets

from django.conf import settings
from django.db import transaction

from playground.localapi.models import ApiKey


def digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def mint(label: str, replaces: str | None = None) -> str:
    """A new key, stored hashed; returns the raw key, which is never stored or shown again.

    With `replaces` (a raw key), the new key takes over that key's owner and the old key is revoked.
    """
    raw = "sk-local-" + secrets.token_urlsafe(32)
    owner = digest(raw)
    with transaction.atomic():
        if replaces:
            old = ApiKey.objects.select_for_update().filter(digest=digest(replaces)).first()
            if old is not None:
                owner = old.owner
                old.delete()
        ApiKey.objects.create(digest=digest(raw), owner=owner, label=label[:100])
    return raw


def revoke(raw: str) -> bool:
    """Stop accepting a stored key; whether there was one."""
    deleted, _ = ApiKey.objects.filter(digest=digest(raw)).delete()
    return bool(deleted)


def _operator_owner(raw: str) -> str | None:
    # Compare against every operator key so the time taken does not reveal which one matched.
    matches = [hmac.compare_digest(raw.encode(), key.encode()) for key in settings.LOCAL_API_KEYS]
    return digest(raw) if any(matches) else None


def owner_for(raw: str) -> str | None:
    """The owner of a valid key (what the local API records on resources, never the key), or None."""
    if not raw:
        return None
    return _operator_owner(raw) or ApiKey.objects.filter(digest=digest(raw)).values_list("owner", flat=True).first()


async def aowner_for(raw: str) -> str | None:
    if not raw:
        return None
    return (
        _operator_owner(raw) or await ApiKey.objects.filter(digest=digest(raw)).values_list("owner", flat=True).afirst()
    )
