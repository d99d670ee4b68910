"""Helpers shared by every view of the local API: error bodies (spec 7), bearer auth, JSON parsing,
trace headers and the fault switch used by demos and tests.

Error codes (the spec names only 20012 and 50505; the others follow the same numbering, our choice):
20012 unknown model, 20015 invalid parameter value or limit, 20016 parameter not supported by the model,
30001 account in arrears (402), 50000 unknown service error (500), 50505 model service overloaded (503).
"""

import asyncio
import functools
import re
import sys
import uuid
from dataclasses import dataclass
from typing import Literal

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from playground import inputs
from playground.localapi import keys
from playground.localapi.engines.generator.script import fault_directive

UNKNOWN_MODEL = 20012
INVALID_PARAMETER = 20015
UNSUPPORTED_PARAMETER = 20016
ARREARS = 30001
SERVICE_ERROR = 50000
OVERLOADED = 50505
RATE_LIMIT_TYPES = ("RPM", "RPD", "TPM", "TPD", "IPM", "IPD")
_DEFAULT_CODES = {400: INVALID_PARAMETER, 402: ARREARS, 500: SERVICE_ERROR, 503: OVERLOADED}


def new_trace_id() -> str:
    return uuid.uuid4().hex


def trace_headers(response: HttpResponse, trace_id: str | None = None) -> HttpResponse:
    response["x-service-trace-id"] = trace_id or new_trace_id()
    response["cache-control"] = "no-cache, no-store"
    return response


def error(status: int, message: str, code: int | None = None, data=None) -> JsonResponse:
    """A JSON error `{code, message, data}` (400, 402, 500, 503)."""
    body = {"code": code if code is not None else _DEFAULT_CODES.get(status, status * 100), "message": message}
    body["data"] = data
    return trace_headers(JsonResponse(body, status=status))


def plain(status: int, text: str) -> HttpResponse:
    """A plain-string body (401, 403, 404, 504)."""
    return trace_headers(HttpResponse(text, status=status, content_type="text/plain; charset=utf-8"))


def rate_limited(limit_type: str, retry_after: int = 5) -> JsonResponse:
    """429 naming which limit was hit, in words, with Retry-After.

    The spec's `{message, data}` (data: the limit type) plus `type: rate_limit_exceeded`, the type an
    OpenAI-compatible client looks for.
    """
    limit_type = limit_type.upper()
    message = (
        f"Rate limit reached: {limit_type} ({_LIMIT_NAMES.get(limit_type, limit_type)}) for this key. "
        f"Retry after {retry_after} seconds."
    )
    response = JsonResponse(
        {
            "message": message,
            "data": limit_type,
            "type": "rate_limit_exceeded",
        },
        status=429,
    )
    response["Retry-After"] = str(retry_after)
    return trace_headers(response)


_LIMIT_NAMES = {
    "RPM": "requests per minute",
    "RPD": "requests per day",
    "TPM": "tokens per minute",
    "TPD": "tokens per day",
    "IPM": "images per minute",
    "IPD": "images per day",
}


def _bearer(request: HttpRequest) -> str:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


_MISSING_KEY = "Missing API key: send the header 'Authorization: Bearer <API_KEY>'."
_INVALID_KEY = "Invalid API key: the key in the Authorization header is not valid."


def authenticate(request: HttpRequest) -> str | HttpResponse:
    """The owner of the request's bearer key (see keys.py), or a 401 plain-string response."""
    token = _bearer(request)
    if not token:
        return plain(401, _MISSING_KEY)
    return keys.owner_for(token) or plain(401, _INVALID_KEY)


async def aauthenticate(request: HttpRequest) -> str | HttpResponse:
    token = _bearer(request)
    if not token:
        return plain(401, _MISSING_KEY)
    return await keys.aowner_for(token) or plain(401, _INVALID_KEY)


# Body size limits per endpoint (bytes); requests above them get a 413 naming the limit.
MB = 1024 * 1024
DEFAULT_MAX_BODY = 1 * MB


def too_large(size: int, limit: int) -> JsonResponse:
    return error(
        413,
        f"body: {size:,} bytes is more than the limit of {limit:,} bytes ({limit / MB:g} MB) for this endpoint",
        code=INVALID_PARAMETER,
    )


def _body_size_error(request: HttpRequest, limit: int) -> HttpResponse | None:
    try:
        declared = int(request.headers.get("Content-Length") or 0)
    except ValueError:
        return error(400, "Content-Length: not a number")
    if declared > limit:
        return too_large(declared, limit)
    return None


def parse_json(request: HttpRequest) -> dict | HttpResponse:
    """The JSON object in the request body, or a 400 response saying what is wrong with it.

    NaN, Infinity, NUL characters and nesting deeper than inputs.MAX_JSON_DEPTH are refused by name.
    """
    try:
        body = inputs.loads(request.body or b"")
    except RequestDataTooBig:
        return too_large(len(request.read()), settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    except inputs.InputError as exc:
        return error(400, str(exc))
    except (ValueError, UnicodeDecodeError) as exc:
        return error(400, f"body: not valid JSON ({exc})")
    if not isinstance(body, dict):
        return error(400, "body: expected a JSON object")
    return body


@dataclass
class Fault:
    """A fault requested through `X-Local-Fault` or a `[fault:<value>]` directive in the last user message.

    Status faults carry a ready `response`; stream faults carry `drop_after` / `malformed_after` (chunks),
    `stall` (seconds before the first token) or `idle_after` (a pause of S seconds after N chunks).
    """

    value: str
    response: HttpResponse | None = None
    drop_after: int | None = None
    malformed_after: int | None = None
    stall: float | None = None
    idle_after: tuple[int, float] | None = None  # (chunks, seconds): a pause in the middle of the stream


def _last_user_text(body) -> str:
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role", "user") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
            return ""
    return ""


def fault_for(request: HttpRequest, body=None) -> Fault | None:
    """The fault this request asks for, if any (header first, then the chat directive)."""
    value = (request.headers.get("X-Local-Fault") or "").strip().lower() or fault_directive(_last_user_text(body))
    if not value:
        return None
    try:
        retry_after = max(0, int(request.headers.get("X-Local-Retry-After", "5")))
    except ValueError:
        retry_after = 5
    if value == "401":
        return Fault(value, plain(401, "Invalid API key (fault injected by X-Local-Fault)."))
    if value == "402":
        return Fault(value, error(402, "Account in arrears: recharge before retrying (fault injected)."))
    if value == "403":
        return Fault(value, plain(403, "Forbidden: this model needs real-name verification (fault injected)."))
    if value == "404":
        return Fault(value, plain(404, "Not found (fault injected)."))
    if value.startswith("429-") and value[4:].upper() in RATE_LIMIT_TYPES:
        return Fault(value, rate_limited(value[4:], retry_after))
    if value == "500":
        return Fault(value, error(500, "Unknown service error (fault injected)."))
    if value == "503":
        response = error(503, "Model service overloaded, please retry later (fault injected).", code=OVERLOADED)
        response["Retry-After"] = str(retry_after)
        return Fault(value, response)
    if value == "504":
        return Fault(value, plain(504, "Gateway timeout: the model took too long to answer (fault injected)."))
    for prefix, attr in (("drop-after-", "drop_after"), ("malformed-after-", "malformed_after")):
        if value.startswith(prefix) and value[len(prefix) :].isdigit():
            return Fault(value, **{attr: int(value[len(prefix) :])})
    idle = re.fullmatch(r"idle-after-(\d+)-(\d+(?:\.\d+)?)", value)
    if idle:
        return Fault(value, idle_after=(int(idle.group(1)), min(float(idle.group(2)), 600.0)))
    if value.startswith("stall-"):
        try:
            return Fault(value, stall=max(0.0, min(float(value[6:]), 600.0)))
        except ValueError:
            pass
    return Fault(value, error(400, f"X-Local-Fault: unknown fault {value!r}", code=INVALID_PARAMETER))


def endpoint(
    *methods: str,
    auth: bool = True,
    json_body: bool = False,
    faults: Literal["status", "stream"] | None = None,
    max_body: int = DEFAULT_MAX_BODY,
):
    """Make a view a local API endpoint (sync or async).

    The view is CSRF-exempt and outside the playground's login (its bearer key is the auth). In this order:
    another method than `methods` (any when none are given) gets a plain 405; with `auth`, a missing or
    invalid key gets a 401 and the view receives `owner`; a body larger than `max_body` bytes gets a 413;
    with `json_body`, a body that is not a JSON
    object gets a 400 and the view receives `body`; with `faults`, a status fault answers in the view's
    place, and `faults="stream"` also hands the view its `fault` (None, or the stream fault to play).
    """

    def refused_method(request: HttpRequest) -> HttpResponse | None:
        if methods and request.method not in methods:
            response = plain(405, f"Method not allowed: use {' or '.join(methods)}.")
            response["Allow"] = ", ".join(methods)
            return response
        return None

    def prelude(request: HttpRequest, owner: str | HttpResponse | None) -> dict | HttpResponse:
        given = {}
        if auth:
            if isinstance(owner, HttpResponse):
                return owner
            given["owner"] = owner
        oversized = _body_size_error(request, max_body)
        if oversized is not None:
            return oversized
        if json_body:
            given["body"] = parse_json(request)
            if isinstance(given["body"], HttpResponse):
                return given["body"]
        if faults:
            fault = fault_for(request, given.get("body"))
            if fault and fault.response is not None:
                return fault.response
            if faults == "stream":
                given["fault"] = fault
        return given

    def decorate(view):
        if iscoroutinefunction(view):

            async def wrapper(request, *args, **kwargs):
                refused = refused_method(request)
                if refused is not None:
                    return refused
                given = prelude(request, await aauthenticate(request) if auth else None)
                if isinstance(given, HttpResponse):
                    return given
                return await view(request, *args, **given, **kwargs)

        else:

            def wrapper(request, *args, **kwargs):
                refused = refused_method(request)
                if refused is not None:
                    return refused
                given = prelude(request, authenticate(request) if auth else None)
                if isinstance(given, HttpResponse):
                    return given
                return view(request, *args, **given, **kwargs)

        return csrf_exempt(login_not_required(functools.wraps(view)(wrapper)))

    return decorate


async def drop_connection(request: HttpRequest) -> None:
    """Close the client's TCP connection mid-response, as a failing provider would (the `drop-after-N` fault).

    ASGI has no way to abort a response once started, so under daphne this finds the connection among the
    reactor's readers by the client's address and closes it after flushing what was sent: the client sees a
    chunked body that never ends properly. Elsewhere the body just ends early.
    """
    client = request.scope.get("client") if hasattr(request, "scope") else None
    reactor = sys.modules.get("twisted.internet.reactor")
    if client and reactor is not None and hasattr(reactor, "getReaders"):
        for reader in reactor.getReaders():
            try:
                peer = reader.getPeer()
            except (AttributeError, NotImplementedError):  # listening ports, the waker
                continue
            if (getattr(peer, "host", None), getattr(peer, "port", None)) == tuple(client):
                reader.loseConnection()
                # Let the disconnect reach the application, which then cancels this response.
                await asyncio.sleep(5)
                return
