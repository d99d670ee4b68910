"""Which addresses the server may call on a user's behalf.

Without a check, a connection's base URL could make the server fetch internal addresses (cloud metadata,
the database, admin panels on localhost). With PLAYGROUND_ALLOWED_UPSTREAM_HOSTS set, only those hosts are
allowed; without it, any host whose addresses are all public is allowed.
"""

import asyncio
import ipaddress
import socket
import time
from fnmatch import fnmatch
from urllib.parse import urlsplit

from django.conf import settings

from playground.upstream.errors import UpstreamError

_resolved: dict[str, tuple[float, list[str]]] = {}
_TTL = 60.0


def host_allowed_by_setting(host: str) -> bool | None:
    """True/False when the admin setting decides, None when it is unset."""
    patterns = settings.ALLOWED_UPSTREAM_HOSTS
    if not patterns:
        return None
    return any(fnmatch(host.lower(), pattern.lower()) for pattern in patterns)


def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    return ip.is_global and not (ip.is_multicast or ip.is_reserved)


def split(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise UpstreamError(kind="blocked", message="The base URL must start with http:// or https:// and name a host.")
    return parts.scheme, parts.hostname


def _blocked(host: str, why: str) -> UpstreamError:
    return UpstreamError(kind="blocked", message=f"{host}: {why}")


def _decide(addresses: list[str], host: str) -> None:
    if not addresses:
        raise UpstreamError(kind="network", message=f"Cannot resolve {host}.")
    if not all(is_public(address) for address in addresses):
        raise _blocked(host, "private, loopback and link-local addresses are not allowed.")


def _allowed_by_setting(url: str) -> tuple[str, bool]:
    """The URL's host, and whether the admin setting already allows it (it raises when it refuses it)."""
    _, host = split(url)
    decision = host_allowed_by_setting(host)
    if decision is False:
        raise _blocked(host, "this host is not in PLAYGROUND_ALLOWED_UPSTREAM_HOSTS.")
    return host, decision is True


async def check_url(url: str) -> None:
    """Raise UpstreamError(kind="blocked") unless the server may call this URL."""
    host, allowed = _allowed_by_setting(url)
    if not allowed:
        _decide(await _resolve(host), host)


def check_url_sync(url: str) -> None:
    """The same check for forms (sync code); a host that cannot be resolved now is left to the call-time check."""
    host, allowed = _allowed_by_setting(url)
    if allowed:
        return
    try:
        addresses = [str(ipaddress.ip_address(host))]
    except ValueError:
        try:
            addresses = sorted({info[4][0] for info in socket.getaddrinfo(host, None)})
        except OSError:
            return
    _decide(addresses, host)


async def _resolve(host: str) -> list[str]:
    try:
        ipaddress.ip_address(host)
        return [host]
    except ValueError:
        pass
    cached = _resolved.get(host)
    if cached and cached[0] > time.monotonic():
        return cached[1]
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None)
    except OSError:
        return []
    addresses = sorted({info[4][0] for info in infos})
    _resolved[host] = (time.monotonic() + _TTL, addresses)
    return addresses
