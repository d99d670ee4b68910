from django.core import checks

from playground.connections import keycheck


@checks.register(checks.Tags.security)
def encryption_keys_read_stored_secrets(app_configs=None, **kwargs):
    tried, failed = keycheck.unreadable_secrets()
    if not failed:
        return []
    return [
        checks.Error(
            f"{failed} of {tried} stored API keys checked cannot be decrypted with the configured encryption keys.",
            hint=keycheck.ADVICE,
            id="connections.E001",
        )
    ]
