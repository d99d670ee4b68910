"""Who a verified ID token is: the provider's subject linked to an account, made just in time when new.

An account is found by its link (issuer + subject); failing that, an existing local account is linked only when the
provider says the email is verified; failing that, a new account is made. Then the required group is checked, the
groups are applied to teams (groups.py), and the link remembers the groups. Every refusal is a SignInRefused whose
words the sign-in page shows.
"""

import re

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from playground.sso import groups as group_mapping
from playground.sso.models import Identity
from playground.sso.signals import account_event


class SignInRefused(Exception):
    """Single sign-on did not sign this person in; the message says why and what to do, in words."""


def groups_of(claims: dict) -> set[str]:
    value = claims.get(settings.OIDC_GROUPS_CLAIM)
    if isinstance(value, str):
        value = value.split()
    if not isinstance(value, list):
        return set()
    return {str(group) for group in value if isinstance(group, str | int)}


def _username(claims: dict) -> str:
    """A free username from the username claim (or the email's local part, or the subject)."""
    email = str(claims.get(settings.OIDC_EMAIL_CLAIM) or "")
    wanted = str(claims.get(settings.OIDC_USERNAME_CLAIM) or email.partition("@")[0] or claims["sub"])
    base = re.sub(r"[^\w.@+-]", "", wanted)[:140] or "user"
    users = get_user_model().objects
    name, n = base, 1
    while users.filter(username__iexact=name).exists():
        n += 1
        name = f"{base}{n}"
    return name


def _account(issuer: str, claims: dict):
    """The linked account, an existing one with this verified email (then linked), or a new one."""
    User = get_user_model()
    identity = Identity.objects.select_related("user").filter(issuer=issuer, subject=claims["sub"]).first()
    if identity is not None:
        return identity
    email = str(claims.get(settings.OIDC_EMAIL_CLAIM) or "").strip()
    same_email = list(User.objects.filter(email__iexact=email)[:2]) if email else []
    if same_email:
        if claims.get("email_verified") is not True:
            raise SignInRefused(
                f"An account with the email {email} exists here, but the sign-in provider does not say this email "
                "is verified, so it was not linked to your sign-in. Verify your email at the provider, or sign in "
                "with your password."
            )
        if len(same_email) > 1:
            raise SignInRefused(
                f"More than one account here has the email {email}, so single sign-on cannot tell which is yours. "
                "Ask an administrator."
            )
        user = same_email[0]
        detail = f"{user} linked to single sign-on (verified email {email})."
        account_event.send(None, action="sso_linked", detail=detail, subject=user)
    else:
        user = User(username=_username(claims), email=email)
        user.set_unusable_password()
        user.save()
        account_event.send(
            None, action="sso_created", detail=f"Account {user} created by single sign-on.", subject=user
        )
    return Identity.objects.create(user=user, issuer=issuer, subject=claims["sub"])


def sign_in(*, issuer: str, claims: dict):
    """The account `claims` (an ID token's, with the userinfo's) belong to, with its teams following the groups."""
    groups = groups_of(claims)
    required = settings.OIDC_REQUIRED_GROUP
    if required and required not in groups:
        who = claims.get(settings.OIDC_EMAIL_CLAIM) or claims.get("sub")
        account_event.send(
            None, action="sso_refused", detail=f"{who}: not in the required group “{required}”.", subject=None
        )
        raise SignInRefused(
            f"Your sign-in account is not in the group “{required}”, which this playground requires, so you "
            "cannot sign in. Ask your administrator to add you to it."
        )
    try:
        with transaction.atomic():
            return _sign_in(issuer, claims, groups)
    except IntegrityError:
        # The same person's first sign-in in two tabs at once: the other one made the account.
        raise SignInRefused("Another sign-in was making this account at the same moment: sign in again.") from None


def _sign_in(issuer: str, claims: dict, groups: set[str]):
    identity = _account(issuer, claims)
    user = identity.user
    if not user.is_active:
        raise SignInRefused(
            "This account was deactivated by an administrator of this playground, so you cannot sign in. "
            "Its data is kept; ask an administrator to reactivate it."
        )
    identity.groups = sorted(groups)
    identity.last_sign_in = timezone.now()
    identity.save(update_fields=["groups", "last_sign_in"])
    group_mapping.sync_teams(user, groups)
    return user
