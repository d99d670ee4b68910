"""Probes for a load balancer or an orchestrator: /health/live and /health/ready.

Liveness touches nothing: the process answers, so it need not be restarted. Readiness checks what a request needs
(the database, the channel layer when Redis is configured, the encryption keys against the stored secrets) and
answers 503 naming what failed, so the balancer sends no traffic here until it recovers; a process draining after a
SIGTERM (lib/drain.py) answers 503 at once. Each check has its own
time limit: a database that hangs is unready within seconds, not after the connection pool's 30 s.
"""

import asyncio
import logging

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


def _database() -> None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    finally:
        # The probe's thread keeps no connection (nor a pool slot) between probes.
        connection.close()


def _encryption() -> None:
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
    work = check() if asyncio.iscoroutinefunction(check) else asyncio.to_thread(check)
    try:
        await asyncio.wait_for(work, timeout=settings.HEALTH_TIMEOUT)
    except TimeoutError:
        return name, f"no answer within {settings.HEALTH_TIMEOUT:g} s"
    except Exception as exc:
        log.warning("readiness: %s failed: %s", name, exc)
        return name, _words(name, exc)
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
