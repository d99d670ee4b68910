"""Per-key rate limits of the local API: requests and tokens per minute (and per day when configured).

An in-process sliding window: each server process counts on its own, so with N processes a key gets up to
N times the configured limits. Good enough for a local demo; a shared store would be needed beyond that.
"""

import time
from collections import defaultdict, deque
from threading import Lock

from django.conf import settings

_WINDOWS = {"RPM": 60, "TPM": 60, "RPD": 86400, "TPD": 86400}
_events: dict[tuple[str, str], deque] = defaultdict(deque)
_lock = Lock()


def _limits() -> dict[str, int]:
    return {
        "RPM": int(getattr(settings, "LOCAL_API_RPM", 0) or 0),
        "TPM": int(getattr(settings, "LOCAL_API_TPM", 0) or 0),
        "RPD": int(getattr(settings, "LOCAL_API_RPD", 0) or 0),
        "TPD": int(getattr(settings, "LOCAL_API_TPD", 0) or 0),
    }


def _used(owner: str, kind: str, now: float) -> int:
    events = _events[(owner, kind)]
    while events and events[0][0] <= now - _WINDOWS[kind]:
        events.popleft()
    return sum(amount for _, amount in events)


def check(owner: str, tokens: int = 0) -> tuple[str, int] | None:
    """Record one request of `tokens` tokens; return (limit type, retry-after seconds) when over a limit.

    A refused request is not recorded, so a client that waits Retry-After seconds gets through.
    """
    now = time.monotonic()
    with _lock:
        for kind, limit in _limits().items():
            if not limit:
                continue
            amount = 1 if kind.startswith("R") else tokens
            used = _used(owner, kind, now)
            if used + amount > limit and (used or amount > limit):
                events = _events[(owner, kind)]
                oldest = events[0][0] if events else now
                return kind, max(1, int(oldest + _WINDOWS[kind] - now + 0.999))
        for kind, limit in _limits().items():
            if limit:
                _events[(owner, kind)].append((now, 1 if kind.startswith("R") else tokens))
    return None


def reset() -> None:
    with _lock:
        _events.clear()
