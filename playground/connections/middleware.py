from cryptography.fernet import InvalidToken
from django.shortcuts import render
from django.utils.deprecation import MiddlewareMixin

from playground.connections import keycheck


class UnreadableKeyMiddleware(MiddlewareMixin):
    """A page that needs a stored key the configured encryption keys cannot decrypt says so, instead of a 500."""

    def process_exception(self, request, exception):
        if not isinstance(exception, InvalidToken):
            return None
        context = {"advice": keycheck.ADVICE}
        if getattr(request, "htmx", False):
            response = render(request, "connections/_key_error.html", context)
            response["HX-Retarget"] = "#main"
            response["HX-Reswap"] = "innerHTML"
            return response
        return render(request, "connections/key_error.html", context, status=503)
