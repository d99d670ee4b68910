"""API keys of the local API.

Two kinds of key are accepted:
- operator keys from `LOCAL_API_KEYS`, for external clients (their owner is the sha256 of the key);
- keys stored in the ApiKey table as the sha256 of the key, never the key itself: the per-user keys the
  playground mints through `mint()` (its `LOCAL_API_KEY_MINTER` setting) and operator keys made by
  `manage.py localapi_key`, which prints the new key once.

A stored key's `owner` is the identity its voices, files and batches belong to. Rotation (`mint(replaces=…)`)
gives the new key the old key's owner and deletes the old key, so it stops working at once and nothing the
owner made is lost.

Stored keys found are remembered for CACHE_SECONDS in the shared cache (Redis) when there is one, so most requests
make no query; revoking and rotating delete the entry, so a revoked key stops working at once in every process.
Without Redis (one process, locmem) nothing is remembered: a key revoked from another process (a management
command, a test) could otherwise keep working.
"""

import hashlib
import hmac
import secrets

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from playground.localapi.models import ApiKey

CACHE_SECONDS = 300


def digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def _shared() -> bool:
    return "redis" in settings.CACHES["default"]["BACKEND"].lower()


def _cache_key(key_digest: str) -> str:
    return f"localapi-key:{key_digest}"


def _forget(key_digest: str) -> None:
    if _shared():
        cache.delete(_cache_key(key_digest))
        # Again once the deletion is committed: a lookup in between may have cached the row still visible then.
        transaction.on_commit(lambda: cache.delete(_cache_key(key_digest)))


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
                _forget(old.digest)
        ApiKey.objects.create(digest=digest(raw), owner=owner, label=label[:100])
    return raw


def revoke(raw: str) -> bool:
    """Stop accepting a stored key; whether there was one."""
    deleted, _ = ApiKey.objects.filter(digest=digest(raw)).delete()
    _forget(digest(raw))
    return bool(deleted)


def _operator_owner(raw: str) -> str | None:
    # Compare against every operator key so the time taken does not reveal which one matched.
    matches = [hmac.compare_digest(raw.encode(), key.encode()) for key in settings.LOCAL_API_KEYS]
    return digest(raw) if any(matches) else None


def owner_for(raw: str) -> str | None:
    """The owner of a valid key (what the local API records on resources, never the key), or None."""
    if not raw:
        return None
    if owner := _operator_owner(raw):
        return owner
    key_digest, shared = digest(raw), _shared()
    if shared and (owner := cache.get(_cache_key(key_digest))):
        return owner
    owner = ApiKey.objects.filter(digest=key_digest).values_list("owner", flat=True).first()
    if owner and shared:
        cache.set(_cache_key(key_digest), owner, CACHE_SECONDS)
    return owner


async def aowner_for(raw: str) -> str | None:
    if not raw:
        return None
    if owner := _operator_owner(raw):
        return owner
    key_digest, shared = digest(raw), _shared()
    if shared and (owner := await cache.aget(_cache_key(key_digest))):
        return owner
    owner = await ApiKey.objects.filter(digest=key_digest).values_list("owner", flat=True).afirst()
    if owner and shared:
        await cache.aset(_cache_key(key_digest), owner, CACHE_SECONDS)
    return owner
