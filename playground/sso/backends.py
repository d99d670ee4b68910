"""The two ways in: passwords (local accounts, the break-glass path) and OpenID Connect (mozilla-django-oidc).

mozilla-django-oidc runs the authorization code flow (state, nonce, PKCE, the token request, the JWKS lookup and the
signature check). It does not check the ID token's audience or issuer, so `get_payload_data` decodes it again with
both required, with its expiry; a failure is a SignInRefused in words, never a 500.
"""

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from playground.sso import discovery
from playground.sso.services import SignInRefused, sign_in

LEEWAY_SECONDS = 30  # clock skew allowed between the provider and this server

TOKEN_PROBLEMS = [
    (jwt.ExpiredSignatureError, "The sign-in provider’s ID token has expired"),
    (jwt.InvalidAudienceError, "The ID token was issued for another application (its audience is not our client id)"),
    (jwt.InvalidIssuerError, "The ID token was issued by another provider than PLAYGROUND_OIDC_ISSUER"),
    (jwt.InvalidSignatureError, "The ID token’s signature does not match the provider’s keys"),
    (jwt.ImmatureSignatureError, "The ID token is not valid yet (check the server’s clock)"),
    (jwt.MissingRequiredClaimError, "The ID token lacks a required claim"),
    (jwt.InvalidTokenError, "The ID token could not be read"),
]


class LocalBackend(ModelBackend):
    """Django's password check, listed before ModelBackend (which stays only so that sessions signed in under its
    path stay valid). It settles every password sign-in itself: a wrong password, and with
    PLAYGROUND_LOCAL_LOGIN=superusers anyone but a superuser, raise PermissionDenied, which stops Django from asking
    the next backend. The login form (accounts/policy.py) says why in words."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if password is None or (username is None and kwargs.get(get_user_model().USERNAME_FIELD) is None):
            return None
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None or (settings.LOCAL_LOGIN == "superusers" and not user.is_superuser):
            raise PermissionDenied("Not signed in with a password.")
        return user


def _lazy(name: str):
    return property(lambda self: discovery.setting(name, None))


class OIDCBackend(OIDCAuthenticationBackend):
    # Read when used, not when the backend is made: every password sign-in and every request makes one, and neither
    # must wait for (or fail with) the provider.
    OIDC_OP_TOKEN_ENDPOINT = _lazy("OIDC_OP_TOKEN_ENDPOINT")
    OIDC_OP_USER_ENDPOINT = _lazy("OIDC_OP_USER_ENDPOINT")
    OIDC_OP_JWKS_ENDPOINT = _lazy("OIDC_OP_JWKS_ENDPOINT")
    OIDC_RP_CLIENT_ID = _lazy("OIDC_RP_CLIENT_ID")
    OIDC_RP_CLIENT_SECRET = _lazy("OIDC_RP_CLIENT_SECRET")
    OIDC_RP_SIGN_ALGO = _lazy("OIDC_RP_SIGN_ALGO")
    OIDC_RP_IDP_SIGN_KEY = None

    get_settings = staticmethod(discovery.setting)

    def __init__(self, *args, **kwargs):
        self.UserModel = get_user_model()

    def authenticate(self, request, **kwargs):
        if not discovery.enabled() or request is None or "code" not in request.GET:
            return None
        return super().authenticate(request, **kwargs)

    def get_payload_data(self, token, key):
        try:
            algorithm = jwt.get_unverified_header(token).get("alg")
            if algorithm != self.OIDC_RP_SIGN_ALGO:
                raise SignInRefused(
                    f"The ID token is signed with {algorithm}, not {self.OIDC_RP_SIGN_ALGO} "
                    "(PLAYGROUND_OIDC_SIGN_ALGO), so it was not trusted. Nobody was signed in."
                )
            return jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=settings.OIDC_ISSUER,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.InvalidTokenError as exc:
            words = next(words for kind, words in TOKEN_PROBLEMS if isinstance(exc, kind))
            raise SignInRefused(
                f"{words}, so it was not trusted and nobody was signed in. Try signing in again."
            ) from None

    def verify_token(self, token, **kwargs):
        try:
            return super().verify_token(token, **kwargs)
        except SuspiciousOperation as exc:
            raise SignInRefused(
                f"The ID token could not be verified ({exc}), so nobody was signed in. Try signing in again."
            ) from None

    def get_or_create_user(self, access_token, id_token, payload):
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if userinfo.get("sub") not in (None, payload["sub"]):
            raise SignInRefused("The provider’s user information is of another person than its ID token.")
        return sign_in(issuer=payload["iss"], claims={**userinfo, **payload})

    def get_user(self, user_id):
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None
