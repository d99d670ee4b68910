"""Prometheus metrics: what the server counts, and the endpoint that shows them (off unless a token is set).

Labels are bounded and carry no user content and no keys: a view's name (never its path, which may hold a share
token), an HTTP method and status, a job's kind, a provider's host name. The counting is done where every path
passes: a middleware for requests, an ASGI wrapper for websockets, `detached.track()` for background jobs, the
upstream client for providers, the gate for budget refusals (`budget_refused()`).

With several daphne processes, set PROMETHEUS_MULTIPROC_DIR to a directory they share (emptied before they start):
prometheus-client then keeps each process's values in files there and the endpoint of any process sums them.
"""

import atexit
import hmac
import logging
import os
import time
from collections.abc import Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

log = logging.getLogger("playground.request")
generation_log = logging.getLogger("playground.generation")

REQUESTS = Counter(
    "playground_http_requests", "HTTP requests answered, by view name, method and status.", ["view", "method", "status"]
)
REQUEST_SECONDS = Histogram(
    "playground_http_request_duration_seconds", "Time to the response's headers, by method.", ["method"]
)
WEBSOCKETS = Gauge("playground_websocket_connections", "Websocket connections open.", multiprocess_mode="livesum")
WEBSOCKETS_OPENED = Counter("playground_websocket_connections_opened", "Websocket connections opened.")
ACTIVE = Gauge(
    "playground_active_generations",
    "Background jobs running in the server processes, by kind (chat, speech, local batches...).",
    ["kind"],
    multiprocess_mode="livesum",
)
TIME_TO_FIRST_BYTE = Histogram(
    "playground_upstream_time_to_first_token_seconds",
    "From sending a streamed request to a provider to its first bytes of answer, by provider host.",
    ["host", "endpoint"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120),
)
UPSTREAM_ERRORS = Counter(
    "playground_upstream_errors",
    "Failed calls to providers, by host and kind (http status, timeout, network, stream).",
    ["host", "error"],
)
BUDGET_REFUSALS = Counter(
    "playground_budget_refusals", "Requests refused because a member's team budget is used up, by feature.", ["kind"]
)

# Collectors that read their values at scrape time (e.g. the local API's batch queue), registered by their app.
_scrape_collectors: list = []


def budget_refused(kind: str) -> None:
    """Count one request refused by a team budget (`kind`: chat, speech, rerank, batch...)."""
    BUDGET_REFUSALS.labels(kind=kind).inc()


def job_started(kind: str) -> None:
    ACTIVE.labels(kind=kind).inc()


def job_ended(kind: str) -> None:
    ACTIVE.labels(kind=kind).dec()


def first_token(host: str, endpoint: str, seconds: float) -> None:
    TIME_TO_FIRST_BYTE.labels(host=host, endpoint=endpoint).observe(seconds)


def upstream_error(host: str, error: str) -> None:
    UPSTREAM_ERRORS.labels(host=host, error=error).inc()


def generation_ended(kind: str, *, key, status: str, trace_id: str, model: str, seconds: float, **fields) -> None:
    """One log line per finished generation (shown with PLAYGROUND_LOG_FORMAT=json): ids and timings, no content."""
    generation_log.info(
        "%s %s %s",
        kind,
        key,
        status,
        extra={
            "event": "generation",
            "kind": kind,
            "id": key,
            "status": status,
            "trace_id": trace_id,
            "model": model,
            "duration_ms": round(seconds * 1000, 1),
            **fields,
        },
    )


def register_scrape_collector(collector) -> None:
    """A prometheus-client collector (with `collect()`) whose values are read from the database when scraped."""
    if collector not in _scrape_collectors:
        _scrape_collectors.append(collector)
        REGISTRY.register(collector)


# ---------------------------------------------------------------- counting requests and websockets


class RequestMetricsMiddleware:
    """Counts every HTTP response by view name and status; with PLAYGROUND_LOG_FORMAT=json, logs one line each."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable):
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.is_async:
            return self._acall(request)
        started = time.perf_counter()
        response = self.get_response(request)
        self._count(request, response, started)
        return response

    async def _acall(self, request):
        started = time.perf_counter()
        response = await self.get_response(request)
        self._count(request, response, started)
        return response

    def _count(self, request, response, started: float) -> None:
        elapsed = time.perf_counter() - started
        match = getattr(request, "resolver_match", None)
        view = match.view_name if match else ("static" if request.path.startswith("/static/") else "unresolved")
        REQUESTS.labels(view=view, method=request.method, status=str(response.status_code)).inc()
        REQUEST_SECONDS.labels(method=request.method).observe(elapsed)
        if not log.isEnabledFor(logging.INFO):
            return
        log.info(
            "%s %s %s",
            request.method,
            view,
            response.status_code,
            extra={
                "event": "request",
                "method": request.method,
                "view": view,
                "route": match.route if match else "",
                "status": response.status_code,
                "duration_ms": round(elapsed * 1000, 1),
                "trace_id": response.get("X-Service-Trace-Id", ""),
                "user_id": getattr(getattr(request, "user", None), "pk", None),
            },
        )


def count_websockets(app):
    """An ASGI wrapper counting the websocket connections open while `app` serves them."""

    async def counted(scope, receive, send):
        WEBSOCKETS.inc()
        WEBSOCKETS_OPENED.inc()
        try:
            return await app(scope, receive, send)
        finally:
            WEBSOCKETS.dec()

    return counted


# ---------------------------------------------------------------- the endpoint


def install_exit_hook() -> None:
    """With PROMETHEUS_MULTIPROC_DIR, a process that exits takes its live gauges (websockets, jobs) with it."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        atexit.register(multiprocess.mark_process_dead, os.getpid())


def _registry() -> CollectorRegistry:
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    for collector in _scrape_collectors:
        registry.register(collector)
    return registry


@login_not_required
@require_GET
def endpoint(request):
    """/metrics: a 404 unless PLAYGROUND_METRICS_TOKEN is set; then only with `Authorization: Bearer <token>`."""
    token = settings.METRICS_TOKEN
    if not token:
        raise Http404("Metrics are off.")
    given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    if not hmac.compare_digest(given.encode(), token.encode()):
        response = HttpResponse("A bearer token is required.\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)
