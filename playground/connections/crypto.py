"""Encryption of connection keys at rest (MultiFernet over PLAYGROUND_ENCRYPTION_KEYS, newest first)."""

from functools import cache, lru_cache

from cryptography.fernet import Fernet, MultiFernet
from django.conf import settings


@cache
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key.encode()) for key in keys])


def fernet() -> MultiFernet:
    return _fernet(tuple(settings.ENCRYPTION_KEYS))


def encrypt(secret: str) -> str:
    return fernet().encrypt(secret.encode()).decode()


def decrypt(token: str) -> str:
    """Raises cryptography.fernet.InvalidToken when no configured key can decrypt it: never an empty secret.

    Remembered per token and key set (a send decrypts its connection's key each time; a new key is a new token)."""
    return _decrypt(token, tuple(settings.ENCRYPTION_KEYS))


@lru_cache(maxsize=1024)
def _decrypt(token: str, keys: tuple[str, ...]) -> str:
    return _fernet(keys).decrypt(token.encode()).decode()


def rotate(token: str) -> str:
    """Re-encrypt under the newest key."""
    return fernet().rotate(token.encode()).decode()


def mask(secret: str) -> str:
    if not secret:
        return ""
    prefix = secret[:3] if secret.startswith("sk-") else ""
    return f"{prefix}…{secret[-4:]}" if len(secret) > 8 else "…"
