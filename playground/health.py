"""Probes for a load balancer or an orchestrator: /health/live and /health/ready.

Liveness touches nothing: the process answers, so it need not be restarted. Readiness checks what a request needs
(the database, the channel layer when Redis is configured, the encryption keys against the stored secrets) and
answers 503 naming what failed, so the balancer sends no traffic here until it recovers; a process draining after a
SIGTERM (lib/drain.py) answers 503 at once. Each check has its own time limit: a database that hangs is unready
within seconds, not after the connection pool's 30 s.

A busy process is not an unready one: it must not be taken out while its sibling drains (a rolling restart would
leave the balancer with no process). So the checks that block run on threads of their own, not the loop's default
pool (the local API's generations, snapshot renders), on database connections of their own (not slots of the
connection pool, which the answers may all hold), and a check that is only slow (no answer within the limit, no
error) still counts as ok for SLOW_GRACE seconds after its last answer; an error fails at once.
"""

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from playground.connections import keycheck
from playground.lib import drain

log = logging.getLogger(__name__)
_threads = ThreadPoolExecutor(max_workers=2, thread_name_prefix="health")  # one per blocking check
SLOW_GRACE = 5.0
_answered: dict[str, float] = {}  # when each check last answered ok


def _outside_the_pool() -> None:
    """Give this probe thread's connection a database connection of its own instead of a pool slot.

    The checks ask whether the database answers, not whether a slot is free: a process whose every slot is taken by
    its answers (a survivor carrying its draining sibling's load) is busy, not unready, and a probe queued behind its
    answers for HEALTH_TIMEOUT would take it out of the balancer with its sibling (no process left)."""
    options = connection.settings_dict["OPTIONS"]
    if "pool" in options:
        unpooled = {key: value for key, value in options.items() if key != "pool"}
        connection.settings_dict = {**connection.settings_dict, "OPTIONS": unpooled}


def _database() -> None:
    _outside_the_pool()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    finally:
        # The probe's thread keeps no connection between probes.
        connection.close()


def _encryption() -> None:
    _outside_the_pool()
    try:
        tried, failed = keycheck.unreadable_secrets()
    finally:
        connection.close()
    if failed:
        raise RuntimeError(f"{failed} of {tried} stored API keys cannot be decrypted with the configured keys")


async def _channel_layer() -> None:
    layer = get_channel_layer()
    # channels-redis: a round trip on the layer's own connection pool (the in-memory layer needs no check).
    if hasattr(layer, "connection"):
        await layer.connection(0).ping()


async def _run(name: str, check) -> tuple[str, str]:
    if asyncio.iscoroutinefunction(check):
        work = check()
    else:
        work = asyncio.get_running_loop().run_in_executor(_threads, check)
    try:
        await asyncio.wait_for(work, timeout=settings.HEALTH_TIMEOUT)
    except TimeoutError:
        log.warning("readiness: %s gave no answer within %g s", name, settings.HEALTH_TIMEOUT)
        if time.monotonic() - _answered.get(name, -SLOW_GRACE) < SLOW_GRACE:
            return name, "ok"  # slow, not failing: it answered a moment ago
        return name, f"no answer within {settings.HEALTH_TIMEOUT:g} s"
    except Exception as exc:
        log.warning("readiness: %s failed: %s", name, exc)
        _answered.pop(name, None)
        return name, _words(name, exc)
    _answered[name] = time.monotonic()
    return name, "ok"


def _words(name: str, exc: Exception) -> str:
    if name == "encryption":
        return str(exc)
    return f"unreachable ({type(exc).__name__})"


@login_not_required
@never_cache
@require_safe
def live(request):
    return JsonResponse({"status": "live"})


@login_not_required
@never_cache
@require_safe
async def ready(request):
    if drain.draining():
        # At once and without a check: the balancer must stop sending new work here (lib/drain.py).
        return JsonResponse({"status": "draining", "checks": {}}, status=503)
    checks = [("database", _database), ("encryption", _encryption)]
    if settings.REDIS_URL:
        checks.append(("channel_layer", _channel_layer))
    results = dict(await asyncio.gather(*(_run(name, check) for name, check in checks)))
    healthy = all(result == "ok" for result in results.values())
    status = "ready" if healthy else "unready"
    return JsonResponse({"status": status, "checks": results}, status=200 if healthy else 503)
