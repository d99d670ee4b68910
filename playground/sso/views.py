"""Sign in with the identity provider (start, callback) and sign out of both."""

from urllib.parse import urlencode

import requests
from django.conf import settings
from django.contrib import auth
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import SuspiciousOperation
from django.shortcuts import redirect, render, resolve_url
from django.views.decorators.http import require_GET, require_POST
from mozilla_django_oidc import views as oidc

from playground.sso import discovery
from playground.sso.services import SignInRefused

STATE_UNKNOWN = (
    "This sign-in answer does not belong to a sign-in started here, or was already used (its state is unknown), "
    "so nobody was signed in. Start again from the sign-in page."
)


def _failed(request, words: str, status: int = 400):
    return render(request, "sso/failed.html", {"words": words}, status=status)


class _Start(oidc.OIDCAuthenticationRequestView):
    get_settings = staticmethod(discovery.setting)


class _Callback(oidc.OIDCAuthenticationCallbackView):
    get_settings = staticmethod(discovery.setting)

    def login_failure(self):
        error = self.request.GET.get("error_description") or self.request.GET.get("error")
        if error:
            return _failed(self.request, f"The sign-in provider answered: {error[:300]}. Nobody was signed in.", 403)
        if "code" not in self.request.GET or "state" not in self.request.GET:
            return _failed(self.request, "The sign-in answer has no code or no state, so nobody was signed in.")
        return _failed(self.request, STATE_UNKNOWN)


@login_not_required
@require_GET
def start(request):
    if not discovery.enabled():
        return _failed(request, "Single sign-on is not configured here: sign in with your password.", 404)
    try:
        return _Start.as_view()(request)
    except discovery.ProviderUnavailable as exc:
        return _failed(request, str(exc), 502)


@login_not_required
@require_GET
def callback(request):
    if not discovery.enabled():
        return _failed(request, "Single sign-on is not configured here: sign in with your password.", 404)
    try:
        return _Callback.as_view()(request)
    except SignInRefused as exc:
        return _failed(request, str(exc), 403)
    except SuspiciousOperation:
        return _failed(request, STATE_UNKNOWN)
    except discovery.ProviderUnavailable as exc:
        return _failed(request, str(exc), 502)
    except requests.RequestException as exc:
        words = f"The sign-in provider could not be reached or refused the sign-in ({exc.__class__.__name__})."
        return _failed(request, f"{words} Nobody was signed in; try again.", 502)


@login_not_required
@require_POST
def logout(request):
    """End the session here; after single sign-on, also at the provider when it offers an end_session_endpoint."""
    id_token = request.session.get("oidc_id_token")
    auth.logout(request)
    after = request.build_absolute_uri(resolve_url(settings.LOGOUT_REDIRECT_URL))
    if id_token and discovery.enabled():
        try:
            end = discovery.document().get("end_session_endpoint")
        except discovery.ProviderUnavailable:
            end = None
        if end:
            query = urlencode(
                {"id_token_hint": id_token, "post_logout_redirect_uri": after, "client_id": settings.OIDC_RP_CLIENT_ID}
            )
            return redirect(f"{end}?{query}")
    return redirect(after)
