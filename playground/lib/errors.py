"""The site's error pages (Django's handler views): words in the site's layout with a way back, or JSON with a
`type` for JSON clients; and a 503 when a service is down."""

import sys

from django.core.exceptions import PermissionDenied
from django.db import DatabaseError
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.template import loader
from django.utils.html import escape

DATABASE_DOWN = (
    "The database cannot be reached, so nothing was saved. Try again in a moment; if it persists, the operator "
    "should check the database."
)
FAILED = "The server failed. Nothing you typed is lost in the page; try again, and if it persists, check the log."

# status: (JSON type, page title, words, next step)
PAGES = {
    400: (
        "bad_request",
        "This request cannot be read",
        "The page sent something the server cannot read (a form cut short, or an address edited by hand).",
        "Go back, reload the page and try again.",
    ),
    403: (
        "forbidden",
        "Not allowed",
        "Your account may not do this here.",
        "If you think it should, ask the person who runs this playground.",
    ),
    404: (
        "not_found",
        "Page not found",
        "There is nothing at this address: it was deleted, it is not yours, or the address is mistyped.",
        "Check the address, or start again from the playground.",
    ),
}
CSRF_WORDS = (
    "The form was sent with an out-of-date security token (it was open a long time, you signed in or out in "
    "another tab, or the browser blocks cookies), so nothing was saved."
)


def wants_json(request) -> bool:
    return request.path.startswith("/local/") or "json" in request.headers.get("Accept", "")


def _page(request, status: int, words: str = "", title: str = "") -> HttpResponse:
    kind, default_title, default_words, next_step = PAGES[status]
    if wants_json(request):
        return JsonResponse({"error": {"type": kind, "message": words or default_words}}, status=status)
    context = {"title": title or default_title, "words": words or default_words, "next_step": next_step}
    return render(request, "problem.html", context, status=status)


def bad_request(request, exception=None) -> HttpResponse:
    return _page(request, 400)


class Refused(PermissionDenied):
    """A 403 whose words the page says (what may not be done here, and who may do it)."""


def permission_denied(request, exception=None) -> HttpResponse:
    return _page(request, 403, str(exception) if isinstance(exception, Refused) else "")


def page_not_found(request, exception=None) -> HttpResponse:
    return _page(request, 404)


def csrf_failure(request, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: a refused form in words (Django's own page is a developer's page)."""
    return _page(request, 403, CSRF_WORDS, "The form expired")


def server_error(request) -> HttpResponse:
    """handler500: a clear error in the shape the client reads (JSON with a `type`, or words in HTML).

    No database and no signed-in context: this runs when either may be what failed (the session, read before any
    view, is the first thing a dead database breaks). The page is the site's layout rendered without the request
    (so no context processor runs); should even that fail, a line of words.
    """
    error = sys.exc_info()[1]
    down = isinstance(error, DatabaseError)
    kind, words, status = ("database_unavailable", DATABASE_DOWN, 503) if down else ("server_error", FAILED, 500)
    if wants_json(request):
        return JsonResponse({"error": {"type": kind, "message": words}}, status=status)
    title = "The database is unavailable" if down else "Something went wrong"
    context = {"title": title, "words": words, "back_url": "/", "back_label": "Back to the playground"}
    try:
        html = loader.render_to_string("problem.html", context)
    except Exception:  # the template or static files may be what failed: words still go out
        html = f'<!doctype html><title>Unavailable</title><p role="alert">{escape(words)}</p><a href="/">Back</a>'
    return HttpResponse(html, status=status)
