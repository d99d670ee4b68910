"""Websockets are accepted only from this site's own pages (or an origin the operator trusts).

The Origin header must name the same scheme, host and port as the connection itself: the Host header
(checked against ALLOWED_HOSTS), and https when the connection is wss or PLAYGROUND_HTTPS is on (behind a
TLS proxy daphne sees plain ws). CSRF_TRUSTED_ORIGINS entries are accepted too. channels'
AllowedHostsOriginValidator compares host names only, so another port of the same host would pass.
"""

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return parts.scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[parts.scheme]


def origin_allowed(origin: str, host: str, secure: bool) -> bool:
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return False
    given = _origin(origin)
    if given is None:
        return False
    scheme = "https" if secure or settings.HTTPS else "http"
    if given == _origin(f"{scheme}://{host}"):
        return True
    return any(given == _origin(trusted) for trusted in settings.CSRF_TRUSTED_ORIGINS)


class SameOriginValidator:
    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        headers = {name: value.decode("latin1") for name, value in scope.get("headers", [])}
        secure = scope.get("scheme") == "wss"
        if origin_allowed(headers.get(b"origin", ""), headers.get(b"host", ""), secure):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)
