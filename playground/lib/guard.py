"""Which addresses the server may call on a user's behalf: the one outbound guard of the project.

Every call out goes through it: the upstream client's provider calls (playground/upstream/) and the local
API's fetches of media by address (playground/lib/fetch.py). It lives here, below both, so that the local API
never imports the upstream client.

Without a check, a connection's base URL could make the server fetch internal addresses (cloud metadata,
the database, admin panels on localhost). Every address a host resolves to must be public, unless the
operator names that address (or its network) in PLAYGROUND_ALLOWED_UPSTREAM_HOSTS; when that setting is
set, the host itself must also match one of its entries. Naming a host there does not exempt the
addresses it resolves to: `localhost` in the list still needs `127.0.0.1` beside it.

The check runs twice: early, for a clear error before anything is sent, and again inside the client's
connection backend (`PinnedBackend`), which connects to the very address it checked, so a name that
resolves to a public address for the check and to a private one for the request (DNS rebinding) is refused.
"""

import asyncio
import ipaddress
import socket
import ssl
import time
from fnmatch import fnmatch
from urllib.parse import urlsplit

import httpcore
import httpx
from django.conf import settings


class Refused(Exception):
    """The server may not call this address: kind is "blocked" (not allowed) or "network" (cannot resolve)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind, self.message = kind, message


_resolved: dict[str, tuple[float, list[str]]] = {}
_TTL = 60.0

# IPv6 prefixes that carry an IPv4 address in their last 32 bits (NAT64, RFC 6052 and RFC 8215).
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))


def _patterns() -> list[str]:
    return [pattern.strip().lower() for pattern in settings.ALLOWED_UPSTREAM_HOSTS if pattern.strip()]


def _allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The entries of the allow-list that are addresses or networks (`127.0.0.1`, `10.0.0.0/8`)."""
    networks = []
    for pattern in _patterns():
        try:
            networks.append(ipaddress.ip_network(pattern.strip("[]"), strict=False))
        except ValueError:
            continue
    return networks


def host_allowed_by_setting(host: str) -> bool | None:
    """True/False when the admin setting decides on the name, None when it is unset."""
    patterns = _patterns()
    if not patterns:
        return None
    return any(fnmatch(host.lower(), pattern) for pattern in patterns)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (IPv4-mapped, 6to4, NAT64, Teredo client), if any."""
    if ip.ipv4_mapped:
        return ip.ipv4_mapped
    if ip.sixtofour:
        return ip.sixtofour
    if any(ip in network for network in _NAT64):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.teredo:
        return ip.teredo[1]
    # IPv4-compatible (deprecated) ::a.b.c.d
    if int(ip) >> 32 == 0 and int(ip) > 1:
        return ipaddress.IPv4Address(int(ip))
    return None


def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        inner = embedded_ipv4(ip)
        if inner is not None:
            return is_public(str(inner))
    return ip.is_global and not (ip.is_multicast or ip.is_reserved)


def _operator_allows(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    candidates = [ip]
    if isinstance(ip, ipaddress.IPv6Address) and embedded_ipv4(ip) is not None:
        candidates.append(embedded_ipv4(ip))
    return any(candidate in network for candidate in candidates for network in _allowed_networks())


def split(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise Refused("blocked", "The address must start with http:// or https:// and name a host.")
    return parts.scheme, parts.hostname


def _blocked(host: str, why: str) -> Refused:
    return Refused("blocked", f"{host}: {why}")


def decide(addresses: list[str], host: str) -> None:
    """Raise unless every address is public or allowed by the operator."""
    if not addresses:
        raise Refused("network", f"Cannot resolve {host}.")
    if not all(is_public(address) or _operator_allows(address) for address in addresses):
        raise _blocked(host, "private, loopback and link-local addresses are not allowed.")


def _check_name(host: str) -> None:
    if host_allowed_by_setting(host) is False:
        raise _blocked(host, "this host is not in PLAYGROUND_ALLOWED_UPSTREAM_HOSTS.")


async def check_url(url: str) -> None:
    """Raise Refused unless the server may call this URL."""
    _, host = split(url)
    _check_name(host)
    decide(await _resolve(host, cached=True), host)


def check_url_sync(url: str) -> None:
    """The same check for forms (sync code); a host that cannot be resolved now is left to the call-time check."""
    _, host = split(url)
    _check_name(host)
    try:
        addresses = [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        try:
            addresses = sorted({info[4][0] for info in socket.getaddrinfo(host, None)})
        except OSError:
            return
    decide(addresses, host)


async def getaddrinfo(host: str, port: int | None) -> list[str]:
    """The addresses of a host (a seam for tests, which answer with what a rebinding DNS server would)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


async def _resolve(host: str, port: int | None = None, cached: bool = False) -> list[str]:
    try:
        return [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        pass
    entry = _resolved.get(host) if cached else None
    if entry and entry[0] > time.monotonic():
        return entry[1]
    try:
        addresses = await getaddrinfo(host, port)
    except OSError:
        return []
    if cached:
        _resolved[host] = (time.monotonic() + _TTL, sorted(addresses))
    return addresses


def pinned_transport(
    limits: httpx.Limits | None = None,
    backend: type | None = None,
    verify: ssl.SSLContext | bool = True,
    network: httpcore.AsyncNetworkBackend | None = None,
) -> httpx.AsyncHTTPTransport:
    """A transport whose connections go to the address the guard checked (no second DNS lookup).

    `backend` is PinnedBackend or a subclass of it (the upstream client's raises its own error type); `verify` a
    TLS context to share (building one reads the CA bundle); `network` the backend that makes the checked
    connections (httpcore's own by default)."""
    transport = httpx.AsyncHTTPTransport(limits=limits or httpx.Limits(), verify=verify)
    pool = transport._pool  # httpx exposes no network_backend option; httpcore's pool takes one.
    pool._network_backend = (backend or PinnedBackend)(network or pool._network_backend)
    return transport


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """Resolves the host once per connection, checks those addresses and connects to a checked one.

    TLS still uses the URL's host name for SNI and certificate checks (httpcore passes it to start_tls),
    and the Host header is untouched: only the TCP destination is pinned.
    """

    def __init__(self, inner: httpcore.AsyncNetworkBackend):
        self._inner = inner

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):  # noqa: ASYNC109
        name = host.decode() if isinstance(host, bytes) else host
        _check_name(name)
        addresses = await _resolve(name, port)
        decide(addresses, name)
        last_error: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except httpcore.ConnectError as exc:
                last_error = exc
        raise last_error or httpcore.ConnectError(f"Cannot connect to {name}.")

    async def connect_unix_socket(self, path, timeout=None, socket_options=None):  # noqa: ASYNC109
        raise httpcore.ConnectError("Unix sockets are not allowed.")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)
