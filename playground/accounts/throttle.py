"""Throttles on password guessing and mass sign-up, counted in Django's cache.

Login failures are counted per client address and per account name; sign-up attempts per client address.
A counter that reaches its limit blocks that address or account until its window (which starts at the first
counted attempt) ends. With REDIS_URL the cache is Redis and the counts hold across processes; without it
they are per process.
"""

import hashlib
import time

from django.conf import settings
from django.core.cache import cache


def client_ip(request) -> str:
    """The client's address: REMOTE_ADDR, or the last hop of PLAYGROUND_CLIENT_IP_HEADER behind a proxy."""
    header = settings.CLIENT_IP_HEADER
    if header:
        value = request.headers.get(header, "")
        hops = [hop.strip() for hop in value.split(",") if hop.strip()]
        if hops:
            return hops[-1]
    return request.META.get("REMOTE_ADDR", "")


def _key(action: str, scope: str, value: str) -> str:
    digest = hashlib.sha256(value.strip().lower().encode()).hexdigest()[:32]
    return f"throttle:{action}:{scope}:{digest}"


def _keys(action: str, ip: str, username: str = "") -> list[str]:
    keys = [_key(action, "ip", ip)]
    if username:
        keys.append(_key(action, "user", username))
    return keys


def _limit(action: str) -> int:
    return settings.LOGIN_FAILURE_LIMIT if action == "login" else settings.SIGNUP_LIMIT


def wait_seconds(request, action: str, username: str = "") -> int:
    """Seconds until this address (or account) may try again; 0 when it is not blocked."""
    limit, now = _limit(action), time.time()
    waits = []
    for key in _keys(action, client_ip(request), username):
        if (cache.get(key) or 0) >= limit:
            started = cache.get(f"{key}:start") or now
            waits.append(max(1, int(started + settings.THROTTLE_WINDOW - now)))
    return max(waits, default=0)


def count(request, action: str, username: str = "") -> None:
    """Count one attempt (a failed login, or a sign-up) against the address and the account."""
    window = settings.THROTTLE_WINDOW
    for key in _keys(action, client_ip(request), username):
        # add() only sets when absent: the window starts at the first attempt and the count expires with it.
        cache.add(f"{key}:start", time.time(), window)
        if not cache.add(key, 1, window):
            try:
                cache.incr(key)
            except ValueError:  # expired between add() and incr()
                cache.add(key, 1, window)


def forget(action: str, ip: str = "", username: str = "") -> None:
    """Clear the counters of an address and/or account (a successful login clears its account's count)."""
    keys = [_key(action, "ip", ip)] if ip else []
    if username:
        keys.append(_key(action, "user", username))
    cache.delete_many([k for key in keys for k in (key, f"{key}:start")])


def message(wait: int) -> str:
    minutes = max(1, round(wait / 60))
    unit = "minute" if minutes == 1 else "minutes"
    return f"Too many attempts from this address or for this account. Wait {minutes} {unit}, then try again."
