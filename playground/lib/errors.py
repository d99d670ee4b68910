"""The answer to an unhandled exception: words instead of a bare 500, and a 503 when a service is down."""

import sys

from django.db import DatabaseError
from django.http import HttpResponse, JsonResponse
from django.utils.html import escape

DATABASE_DOWN = (
    "The database cannot be reached, so nothing was saved. Try again in a moment; if it persists, the operator "
    "should check the database."
)
FAILED = "The server failed. Nothing you typed is lost in the page; try again, and if it persists, check the log."


def server_error(request) -> HttpResponse:
    """handler500: a clear error in the shape the client reads (JSON with a `type`, or words in HTML).

    No template and no database: this runs when either may be what failed (the session, read before any view,
    is the first thing a dead database breaks).
    """
    error = sys.exc_info()[1]
    down = isinstance(error, DatabaseError)
    kind, words, status = ("database_unavailable", DATABASE_DOWN, 503) if down else ("server_error", FAILED, 500)
    wants_json = request.path.startswith("/local/") or "json" in request.headers.get("Accept", "")
    if wants_json:
        return JsonResponse({"error": {"type": kind, "message": words}}, status=status)
    html = f'<!doctype html><title>Unavailable</title><p role="alert">{escape(words)}</p>'
    return HttpResponse(html, status=status)
