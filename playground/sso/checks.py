from django.conf import settings
from django.core.checks import Error, register

from playground.sso import groups


@register()
def sso_settings(app_configs, **kwargs):
    """A wrong group mapping or a half-configured provider stops `manage.py check` and the server, in words."""
    errors = []
    try:
        groups.parse(settings.OIDC_GROUP_TEAMS)
    except ValueError as exc:
        errors.append(Error(str(exc), id="sso.E001"))
    if settings.OIDC_ISSUER and not (settings.OIDC_RP_CLIENT_ID and settings.OIDC_RP_CLIENT_SECRET):
        errors.append(
            Error(
                "PLAYGROUND_OIDC_ISSUER is set but PLAYGROUND_OIDC_CLIENT_ID or PLAYGROUND_OIDC_CLIENT_SECRET is not.",
                id="sso.E002",
            )
        )
    if settings.SIGNUP_MODE == "sso" and not settings.OIDC_ISSUER:
        errors.append(Error("PLAYGROUND_SIGNUP=sso needs single sign-on (PLAYGROUND_OIDC_ISSUER).", id="sso.E003"))
    return errors
