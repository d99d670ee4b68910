from django.conf import settings

from playground.sso import discovery


def sso(request) -> dict:
    """What the sign-in, sign-up and menu templates need: whether single sign-on is on, and its button's name."""
    return {
        "sso_enabled": discovery.enabled(),
        "sso_name": settings.OIDC_PROVIDER_NAME,
        "signup_mode": settings.SIGNUP_MODE,
        "local_login": settings.LOCAL_LOGIN,
    }
