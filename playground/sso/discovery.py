"""The identity provider's discovery document (`<issuer>/.well-known/openid-configuration`), fetched once per
process and kept; its endpoints are what mozilla-django-oidc is pointed at (backends.py, views.py)."""

import requests
from django.conf import settings

# Settings mozilla-django-oidc reads, and the field of the discovery document each comes from.
ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}

_documents: dict[str, dict] = {}


class ProviderUnavailable(Exception):
    """The provider's discovery document could not be read (the words say what to check)."""


def enabled() -> bool:
    return bool(settings.OIDC_ISSUER and settings.OIDC_RP_CLIENT_ID)


def document() -> dict:
    issuer = settings.OIDC_ISSUER
    if issuer not in _documents:
        url = issuer.rstrip("/") + "/.well-known/openid-configuration"
        try:
            response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
            response.raise_for_status()
            found = response.json()
        except (requests.RequestException, ValueError) as exc:
            raise ProviderUnavailable(
                f"The sign-in provider’s discovery document ({url}) could not be read: {exc.__class__.__name__}. "
                "Check PLAYGROUND_OIDC_ISSUER and that the provider is up."
            ) from None
        # OpenID Connect Discovery 1.0, 4.3: the document's issuer must be exactly the configured one.
        if found.get("issuer") != issuer:
            raise ProviderUnavailable(
                f"The discovery document names the issuer {found.get('issuer')!r}, not {issuer!r}: "
                "set PLAYGROUND_OIDC_ISSUER to exactly the provider's issuer."
            )
        missing = [field for field in ENDPOINTS.values() if not found.get(field)]
        if missing:
            raise ProviderUnavailable(f"The discovery document has no {', '.join(missing)}.")
        _documents[issuer] = found
    return _documents[issuer]


def forget() -> None:
    """Read the document again next time (tests; a provider that moved its endpoints)."""
    _documents.clear()


def setting(attr: str, *default):
    """A setting as mozilla-django-oidc asks for it, the endpoints answered from the discovery document."""
    if attr in ENDPOINTS:
        return document()[ENDPOINTS[attr]]
    return getattr(settings, attr, *default)
