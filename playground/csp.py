"""A Content-Security-Policy on every HTML page: scripts only from our own static files, nothing inline.

Inline style attributes stay allowed (score bars set their width that way; a style attribute cannot run
script), but not <style> elements: htmx's own indicator style is turned off in base.html and lives in
app.css. blob: and data: serve attachment previews and audio that plays while it arrives.
"""

from urllib.parse import urlsplit

from django.conf import settings
from django.utils.deprecation import MiddlewareMixin

POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "style-src-attr 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "media-src 'self' data: blob:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


def _policy() -> str:
    policy = getattr(settings, "CONTENT_SECURITY_POLICY", POLICY)
    issuer = urlsplit(settings.OIDC_ISSUER or "")
    if issuer.scheme and issuer.netloc:
        # Sign-out is a form whose answer redirects to the identity provider's end_session_endpoint (sso/views.py).
        policy = policy.replace("form-action 'self'", f"form-action 'self' {issuer.scheme}://{issuer.netloc}")
    return policy


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    def process_response(self, request, response):
        content_type = response.get("Content-Type", "")
        if content_type.startswith("text/html") and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = _policy()
        return response
