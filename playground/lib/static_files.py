"""Static files answered in the event loop, in front of Django.

WhiteNoise is a sync middleware: under daphne every request for a script or a style crosses into Django's one
shared sync thread and back, behind the page's own rendering and every other request's middleware. A chat page's
two dozen scripts and styles then queued there one after the other (hundreds of milliseconds on a loaded
machine). This ASGI wrapper looks the path up in WhiteNoise's own table (same files, same headers, same gzip
copies, same caching and range rules) and answers at once; anything it does not know goes on to Django, where
WhiteNoise's middleware still serves what changed since the start in autorefresh mode (DEBUG).
"""

from django.conf import settings
from django.contrib.staticfiles.storage import StaticFilesStorage
from whitenoise.middleware import WhiteNoiseMiddleware
from whitenoise.storage import CompressedManifestStaticFilesStorage


class FingerprintedStorage(CompressedManifestStaticFilesStorage):
    """WhiteNoise's storage that fingerprints: `collectstatic` also writes each file under a name with a hash of its
    content (bundles/chat.a62db8133135.js) and a manifest; pages link those names and WhiteNoise serves them as
    immutable for a year, so a warm load asks the server for none of them. While the collected files are not
    current (the tests, a file of static/ changed since: settings.WHITENOISE_USE_FINDERS), the pages link the plain
    names, which the finders serve from static/ with a short max-age, never a stale copy."""

    def url(self, name, force=False):
        if settings.WHITENOISE_USE_FINDERS and not force:
            return StaticFilesStorage.url(self, name)
        return super().url(name, force)


def security_headers() -> list[tuple[bytes, bytes]]:
    """What Django's SecurityMiddleware adds to every response (static files are not documents: no CSP)."""
    headers = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"same-origin")]
    if settings.SECURE_HSTS_SECONDS:
        value = f"max-age={settings.SECURE_HSTS_SECONDS}"
        value += "; includeSubDomains" if settings.SECURE_HSTS_INCLUDE_SUBDOMAINS else ""
        value += "; preload" if settings.SECURE_HSTS_PRELOAD else ""
        headers.append((b"strict-transport-security", value.encode()))
    return headers


def plain_http(scope) -> bool:
    """A request that reached us without TLS (directly, or through the proxy's header)."""
    forwarded = dict(scope["headers"]).get(b"x-forwarded-proto", b"").decode("latin-1")
    return scope.get("scheme", "http") != "https" and forwarded != "https"


class StaticFiles:
    def __init__(self, app):
        self.app = app
        self.whitenoise = WhiteNoiseMiddleware(get_response=None)
        self.prefix = self.whitenoise.static_prefix
        self.headers = security_headers()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or self.whitenoise.autorefresh or scope["method"] not in ("GET", "HEAD"):
            return await self.app(scope, receive, send)
        path = scope["path"].removeprefix(scope.get("root_path", ""))
        found = self.whitenoise.files.get(path) if path.startswith(self.prefix) else None
        if found is None or (settings.SECURE_SSL_REDIRECT and plain_http(scope)):
            return await self.app(scope, receive, send)  # unknown, or to be redirected to HTTPS by Django
        meta = {
            "HTTP_" + k.decode("latin-1").upper().replace("-", "_"): v.decode("latin-1") for k, v in scope["headers"]
        }
        response = found.get_response(scope["method"], meta)
        body = b""
        if response.file is not None:
            # Small files, read from the page cache: cheaper than a hop to a thread.
            with response.file as file:
                body = file.read()
        headers = [(k.lower().encode("latin-1"), str(v).encode("latin-1")) for k, v in response.headers]
        await send({"type": "http.response.start", "status": int(response.status), "headers": headers + self.headers})
        await send({"type": "http.response.body", "body": body})
