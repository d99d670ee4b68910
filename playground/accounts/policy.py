"""Who may make an account here and who may sign in with a password (PLAYGROUND_SIGNUP, PLAYGROUND_LOCAL_LOGIN).

Sign-up is "open", "invite" (only on the way to a usable team invite link) or "sso" (accounts come from single
sign-on only). Password sign-in is "on", or "superusers": the break-glass path beside single sign-on.
"""

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.urls import Resolver404, resolve

LOCAL_SUPERUSERS_ONLY = (
    "Please enter a correct username and password. Password sign-in here is for administrators only; everyone "
    "else signs in with {name}."
)


def _invite_token(next_url: str) -> str | None:
    """The invite token of a `next` that is a team's join link (/teams/join/<token>/), else None."""
    try:
        match = resolve((next_url or "").split("?")[0])
    except Resolver404:
        return None
    return match.kwargs.get("token") if match.view_name == "teams:join" else None


def signup_refusal(request) -> str | None:
    """Why this visitor may not sign up, in words; None when they may."""
    mode = settings.SIGNUP_MODE
    if mode == "sso":
        return (
            "Accounts here come from single sign-on only: use “Sign in with "
            f"{settings.OIDC_PROVIDER_NAME}” on the sign-in page. There is no sign-up with a password."
        )
    if mode == "invite":
        from playground.teams.models import Invite

        token = _invite_token(request.POST.get("next") or request.GET.get("next") or "")
        invite = Invite.objects.filter(token=token).first() if token else None
        if invite is None or not invite.usable:
            return (
                "Sign-up here is by invitation only. Open the team invite link you were given (it brings you back "
                "here to sign up), or ask a team owner or admin for one; an expired or used link no longer works."
            )
    return None


DEACTIVATED = (
    "This account was deactivated by an administrator of this playground, so you cannot sign in. Its data is kept; "
    "ask an administrator to reactivate it."
)


class LoginForm(AuthenticationForm):
    """Django's login form; with password sign-in for superusers only, its error says so (for right and wrong
    passwords alike, so it tells nobody whether a password was right). The right password of a deactivated account
    is told so (Django's confirm_login_allowed, in the words single sign-on uses), never "wrong password"."""

    error_messages = {**AuthenticationForm.error_messages, "inactive": DEACTIVATED}

    def get_invalid_login_error(self):
        if settings.LOCAL_LOGIN == "superusers":
            words = LOCAL_SUPERUSERS_ONLY.format(name=settings.OIDC_PROVIDER_NAME)
            return ValidationError(words, code="local_login_off")
        return super().get_invalid_login_error()
