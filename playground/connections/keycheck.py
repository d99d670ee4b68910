"""Can the configured encryption keys read the secrets already stored?

Every stored connection key is a canary: when the configured keys (PLAYGROUND_ENCRYPTION_KEYS, or the
generated `.encryption_key`) cannot decrypt them, the keys were changed without a rotation. `manage.py check`
reports it, the server refuses to start with the same words, and a page that needs a key says so.
"""

from cryptography.fernet import InvalidToken
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError

from playground.connections import crypto

# How many of the most recent stored keys are tried (enough to notice a changed key, cheap at boot).
SAMPLE = 200

ADVICE = (
    "The stored API keys cannot be decrypted with the configured encryption keys "
    "(PLAYGROUND_ENCRYPTION_KEYS, or the generated .encryption_key file when the variable is unset). "
    "Restore the previous key, or list it after the new one (PLAYGROUND_ENCRYPTION_KEYS=new,old), then run "
    "`python manage.py rotate_encryption_key --old=<old> --new=<new>` to re-encrypt every stored key. "
    "See docs/operations.md, 'Keys and rotation'."
)


def unreadable_secrets() -> tuple[int, int]:
    """(how many stored secrets were tried, how many of them the configured keys cannot decrypt)."""
    from playground.connections.models import Connection

    try:
        tokens = list(
            Connection.objects.exclude(encrypted_key="")
            .order_by("-pk")
            .values_list("encrypted_key", flat=True)[:SAMPLE]
        )
    except DatabaseError:  # not migrated yet: nothing stored, nothing to check
        return 0, 0
    failed = 0
    for token in tokens:
        try:
            crypto.decrypt(token)
        except InvalidToken:
            failed += 1
    return len(tokens), failed


def message(tried: int, failed: int) -> str:
    return f"{failed} of {tried} stored API keys checked cannot be decrypted. {ADVICE}"


def verify() -> None:
    """Raise ImproperlyConfigured (for the server's startup) when stored secrets cannot be decrypted."""
    tried, failed = unreadable_secrets()
    if failed:
        raise ImproperlyConfigured(message(tried, failed))
