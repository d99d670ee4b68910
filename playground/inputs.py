"""Checks on untrusted input shared by the playground and the local API (this module imports neither).

JSON from outside is parsed strictly: NaN and Infinity are not JSON numbers, nesting is bounded (Python's
parser would otherwise overflow the stack on a deeply nested body), and NUL characters are refused because
PostgreSQL cannot store them in text or jsonb. Ids read from form fields are integers or a 404 (never a
ValueError), `next` addresses are paths of this site, and websocket frames are decoded by one function with the
same limits. Uploaded audio and video are probed with PyAV so that bytes which are not the claimed kind of media
are refused before they are stored or sent anywhere.
"""

import io
import json
import math

from asgiref.sync import iscoroutinefunction
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.utils.decorators import sync_and_async_middleware
from django.utils.http import url_has_allowed_host_and_scheme

MAX_JSON_DEPTH = 64
MAX_FRAME_BYTES = 1024 * 1024
MAX_FRAME_DEPTH = 8
MAX_ID = 2**63 - 1  # the largest primary key PostgreSQL's bigint holds


class InputError(ValueError):
    """Bad input; the message names the field (a JSON path, or `body`) and the rule or limit. `parsed`: the JSON
    value `loads` read before refusing it (a websocket frame's id comes from it), else None."""

    parsed = None


class NulError(InputError):
    """A NUL character in `field` (a JSON path, or a form field's name)."""

    def __init__(self, field: str, in_keys: bool = False):
        super().__init__(f"{field}: NUL characters (\\u0000) are not allowed{' in keys' if in_keys else ''}")
        self.field = field


# Form fields and frame fields whose name is not what a person reads beside them.
LABELS = {"content": "Message"}


def label(field: str) -> str:
    """The field as a person knows it: its label (the composer's `content` is the Message), else its name spelled
    out when it is a plain one (`system_prompt`: System prompt), else the name as it is (a JSON path, `case-3-…`)."""
    if field in LABELS:
        return LABELS[field]
    return field.replace("_", " ").capitalize() if field.replace("_", "").isalpha() else field


def nul_words(field: str, outcome: str = "Nothing was saved") -> str:
    """The words of a refused NUL character, naming the field as a person knows it."""
    return f"{label(field)}: NUL characters (\\u0000) are not allowed. {outcome}; remove them and try again."


def _path(parent: str, key) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


def check_value(value, field: str = "", depth: int = 0, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise InputError for a non-finite number, a NUL character or nesting deeper than max_depth."""
    where = field or "body"
    if depth > max_depth:
        raise InputError(f"{where}: JSON nested deeper than the limit of {max_depth} levels")
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{where}: must be a finite number (NaN and Infinity are not allowed)")
    if isinstance(value, str) and "\x00" in value:
        raise NulError(where)
    if isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in key:
                raise NulError(where, in_keys=True)
            check_value(item, _path(field, key), depth + 1, max_depth)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_value(item, _path(field, index), depth + 1, max_depth)


def loads(text: str | bytes, field: str = "", max_depth: int = MAX_JSON_DEPTH):
    """json.loads that refuses NaN/Infinity, NUL characters and deep nesting, naming where they are."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise InputError(f"{field or 'body'}: JSON nested deeper than the limit of {max_depth} levels") from None
    try:
        check_value(value, field, 0, max_depth)
    except InputError as exc:
        exc.parsed = value
        raise
    return value


def strip_nul(text: str) -> str:
    return text.replace("\x00", "")


def text(value, field: str, *, limit: int | None = None) -> str:
    """A string without NUL characters and within `limit` characters, else InputError naming the field."""
    if not isinstance(value, str):
        raise InputError(f"{field}: expected text")
    if "\x00" in value:
        raise NulError(field)
    if limit is not None and len(value) > limit:
        raise InputError(f"{field}: {len(value):,} characters; the limit is {limit:,}")
    return value


def object_id(value) -> int:
    """The id of an object named by a form field or a frame: a positive integer, else Http404.

    An id that is not a number names no object, exactly like the id of an object that does not exist.
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise Http404("No such object.")
    if isinstance(value, str):
        value = value.strip()
        if not value.isascii() or not value.isdigit() or len(value) > 19:
            raise Http404("No such object.")
        value = int(value)
    if not 0 < value <= MAX_ID:
        raise Http404("No such object.")
    return value


def next_url(request, fallback: str) -> str:
    """The `next` field of a POST (or GET) when it is a path of this site, else `fallback`."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    safe = url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=False)
    return target if safe and target.startswith("/") and "\x00" not in target else fallback


def decode_frame(text_data: str | None, bytes_data: bytes | None) -> dict:
    """A websocket frame as a JSON object, else InputError in words: text frames only, within
    MAX_FRAME_BYTES and MAX_FRAME_DEPTH, no NaN or NUL."""
    if bytes_data is not None or text_data is None:
        raise InputError("frame: only text frames (JSON objects) are read; a binary frame is ignored")
    if len(text_data) > MAX_FRAME_BYTES:
        raise InputError(f"frame: {len(text_data):,} characters; the limit is {MAX_FRAME_BYTES:,}")
    try:
        value = loads(text_data, max_depth=MAX_FRAME_DEPTH)
    except NulError:
        raise
    except InputError as exc:
        where, _, rule = str(exc).partition(": ")
        error = InputError(f"frame: {rule}" if where == "body" else str(exc))
        error.parsed = exc.parsed
        raise error from None
    except ValueError:
        raise InputError("frame: not valid JSON") from None
    if not isinstance(value, dict):
        raise InputError("frame: expected a JSON object")
    return value


# What a claimed content type may contain: PyAV container names (any of them) per type.
_CONTAINERS = {
    "audio/mpeg": {"mp3"},
    "audio/wav": {"wav"},
    "audio/x-wav": {"wav"},
    "audio/wave": {"wav"},
    "audio/ogg": {"ogg"},
    "audio/opus": {"ogg"},
    "audio/webm": {"matroska", "webm"},
    "audio/mp4": {"mov", "mp4", "m4a"},
    "audio/x-m4a": {"mov", "mp4", "m4a"},
    "audio/flac": {"flac"},
    "audio/aac": {"aac"},
    "video/mp4": {"mov", "mp4"},
    "video/webm": {"matroska", "webm"},
    "video/quicktime": {"mov", "mp4"},
    "video/ogg": {"ogg"},
}


def probe_media(data: bytes, content_type: str) -> str:
    """The content type of these bytes, of the claimed kind (audio or video), probed with PyAV.

    The claimed type when the container matches it; another type of the same kind when the bytes are that
    (a WAV file named .mp3); InputError when they are not readable media of the claimed kind.
    """
    import av  # PyAV is heavy to import; only uploads need it.

    kind = content_type.split("/")[0]
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            formats = set(container.format.name.split(","))
            name = container.format.long_name or container.format.name
            tracks = {"audio": bool(container.streams.audio), "video": bool(container.streams.video)}
    except (av.FFmpegError, ValueError, OSError, EOFError):
        raise InputError(f"not a readable {kind} file") from None
    if kind in tracks and not tracks[kind]:
        raise InputError(f"it has no {kind} track ({name})")
    if formats & _CONTAINERS.get(content_type, formats):
        return content_type
    same_kind = (t for t, names in _CONTAINERS.items() if t.startswith(kind + "/") and formats & names)
    actual = next(same_kind, None)
    if actual is None:
        raise InputError(f"its bytes are {name}, not {content_type}")
    return actual


# The local API answers bad input in its own JSON shape (localapi/http.py), field by field.
UNGUARDED_PREFIXES = ("/local/v1/",)


def nul_field(request) -> str | None:
    """The name of the first posted field (or uploaded file name) holding a NUL character, if any."""
    if request.method != "POST" or request.path_info.startswith(UNGUARDED_PREFIXES):
        return None
    for name, values in request.POST.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            return name.replace("\x00", "") or "field"
    for name, files in request.FILES.lists():
        if any("\x00" in (upload.name or "") for upload in files):
            return name
    return None


def refuse_nul(request, field: str):
    """A 400 in words naming the field: words alone for htmx (the page shows them), the site's page otherwise."""
    words = nul_words(field)
    if request.headers.get("HX-Request"):
        response = HttpResponse(words, status=400, content_type="text/plain; charset=utf-8")
    else:
        response = render(request, "problem.html", {"title": "This input cannot be saved", "words": words}, status=400)
    response["X-Refused-Input"] = "nul"  # what was refused (the words name the field)
    return response


@sync_and_async_middleware
def input_middleware(get_response):
    """Every form post of the playground passes here: a field holding a NUL character is refused in words
    before any view reads it (PostgreSQL cannot store NUL in text, and no form needs one)."""
    if iscoroutinefunction(get_response):

        async def middleware(request):
            field = nul_field(request)
            return refuse_nul(request, field) if field else await get_response(request)

    else:

        def middleware(request):
            field = nul_field(request)
            return refuse_nul(request, field) if field else get_response(request)

    return middleware
