"""The two ways in: passwords (local accounts, the break-glass path) and OpenID Connect (mozilla-django-oidc).

mozilla-django-oidc runs the authorization code flow (state, nonce, PKCE, the token request). Its key lookup fails on
a token without `kid` and it does not check the ID token's audience or issuer, so the key is chosen here
(`signing_key`), `get_payload_data` decodes the token with both required, with its expiry, and `verify_token` checks
the nonce; a failure is a SignInRefused in words, never a 500 nor the library's own words.
"""

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied
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


UNREAD = "The ID token could not be checked"
KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}  # a key without "alg" fits by its type


def signing_key(keys: list, header: dict) -> dict:
    """The key of the provider's key set (JWKS) that signed a token with this header: the one of its `kid`; a token
    without a `kid` is accepted when the set has one key, or one key of the token's algorithm (OpenID Connect Core
    10.1 requires `kid` only of a provider with several keys). Else SignInRefused, in words."""
    algorithm = str(header.get("alg", ""))

    def fits(key) -> bool:
        if not isinstance(key, dict) or key.get("use", "sig") != "sig":
            return False
        if "alg" in key:
            return key["alg"] == algorithm
        return key.get("kty") == KEY_TYPES.get(algorithm[:2])

    usable = [key for key in keys if fits(key)]
    if "kid" in header:
        named = [key for key in usable if key.get("kid") == header["kid"]]
        if named:
            return named[-1]
        raise SignInRefused(
            f"{UNREAD}: the provider’s key set has no {algorithm} key named “{str(header['kid'])[:80]}”, so the "
            "token was not trusted and nobody was signed in. Try again (the provider may have just changed its keys)."
        )
    if len(usable) == 1:
        return usable[0]
    raise SignInRefused(
        f"{UNREAD}: it does not name its key (no kid) and the provider’s key set has "
        f"{len(usable) or 'no'} {algorithm} key{'' if len(usable) == 1 else 's'}, so nobody was signed in. "
        "Ask the provider’s administrator to put the key id (kid) in its ID tokens."
    )


class LocalBackend(ModelBackend):
    """Django's password check, listed before ModelBackend (which stays only so that sessions signed in under its
    path stay valid). It settles every password sign-in itself: a wrong password, and with
    PLAYGROUND_LOCAL_LOGIN=superusers anyone but a superuser, raise PermissionDenied, which stops Django from asking
    the next backend. The login form (accounts/policy.py) says why in words.

    The right password of a deactivated account returns its user, as Django's AllowAllUsersModelBackend does, so
    that the form's confirm_login_allowed says the account is deactivated (a wrong one is refused like any other);
    sessions still end with the account (get_user keeps ModelBackend's is_active check)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if password is None or (username is None and kwargs.get(get_user_model().USERNAME_FIELD) is None):
            return None
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            user = self._deactivated(username, password, **kwargs)
        if user is None or (settings.LOCAL_LOGIN == "superusers" and not user.is_superuser):
            raise PermissionDenied("Not signed in with a password.")
        return user

    @staticmethod
    def _deactivated(username, password, **kwargs):
        """The deactivated account this password is right for, else None."""
        model = get_user_model()
        username = username if username is not None else kwargs.get(model.USERNAME_FIELD)
        user = model._default_manager.filter(**{model.USERNAME_FIELD: username}, is_active=False).first()
        return user if user is not None and user.check_password(password) else None


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

    def retrieve_matching_jwk(self, token):
        """The provider's key that signed `token` (the library's own lookup fails with KeyError on a token without
        a `kid`, which OpenID Connect Core 10.1 allows when the provider has one key)."""
        response = requests.get(
            self.OIDC_OP_JWKS_ENDPOINT,
            verify=self.get_settings("OIDC_VERIFY_SSL", True),
            timeout=self.get_settings("OIDC_TIMEOUT", None),
            proxies=self.get_settings("OIDC_PROXY", None),
        )
        response.raise_for_status()
        try:
            header = jwt.get_unverified_header(token)
            keys = response.json().get("keys")
        except (jwt.InvalidTokenError, ValueError, AttributeError):
            raise SignInRefused(f"{UNREAD}, so it was not trusted and nobody was signed in.") from None
        try:
            return jwt.PyJWK(signing_key(keys if isinstance(keys, list) else [], header))
        except jwt.PyJWKError:
            raise SignInRefused(f"{UNREAD}: the provider’s key for it is not usable. Nobody was signed in.") from None

    def verify_token(self, token, **kwargs):
        """The library's check in the product's words: the signature (with `retrieve_matching_jwk`), the claims
        (`get_payload_data`) and the nonce."""
        if self.OIDC_RP_SIGN_ALGO.startswith(("RS", "ES", "PS")):
            key = self.retrieve_matching_jwk(token)
        else:
            key = self.OIDC_RP_CLIENT_SECRET
        payload = self.get_payload_data(token, key)
        if self.get_settings("OIDC_USE_NONCE", True) and kwargs.get("nonce") != payload.get("nonce"):
            raise SignInRefused(
                "The ID token was not issued for this sign-in (its nonce is not the one this browser sent), so it "
                "was not trusted and nobody was signed in. Start again from the sign-in page."
            )
        return payload

    def get_or_create_user(self, access_token, id_token, payload):
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if userinfo.get("sub") not in (None, payload["sub"]):
            raise SignInRefused("The provider’s user information is of another person than its ID token.")
        return sign_in(issuer=payload["iss"], claims={**userinfo, **payload})

    def get_user(self, user_id):
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None
