"""The whole surface under bad input: every URL pattern of the resolver and every websocket action of every
consumer, each sent generated bad input as two users (wrong types, missing and extra fields, huge strings, deep
nesting, NUL, invalid UTF-8, foreign ids, non-integer ids).

Asserted: no 5xx, no error or traceback in the log, no NUL stored, and nothing of the other user's changed. The
endpoints, the field names (every form's fields and every field a view reads by name) and the socket actions are
found, not listed, so a new one is covered without editing this file. Hypothesis draws a fixed number of examples
per endpoint from a fixed seed (`derandomize`), so every run sends the same requests.

The URL fuzz sends 6 requests per endpoint and user on PostgreSQL, where the database itself refuses what SQLite
stores (a NUL in text), and by hand; on CI's SQLite lane (tests/conftest.py, CI_LANE) it sends
the first 3 of the same 6 (the seed draws them in the same order), which still reach every endpoint as both users:
2,294 requests in 92-93 s against 1,200 in 56 s (SQLite, this 2-core machine, one pytest process).
"""

import asyncio
import inspect
import json
import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django import forms
from django.apps import apps
from django.conf import settings
from django.contrib.auth import aget_user
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connections, models
from django.http import HttpRequest
from django.test import AsyncClient
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from hypothesis import HealthCheck, given, seed
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from playground.asgi import application
from playground.chat.models import Conversation, Message
from playground.connections.models import Connection
from playground.devserver import free_port
from playground.lib import detached
from playground.lib.frames import FrameConsumer
from playground.prompts.models import ApiToken, Label
from playground.rerank.models import RerankRun
from playground.routing import websocket_urlpatterns
from playground.sharing.freeze import freeze
from playground.sharing.models import Share
from playground.teams.models import OWNER, Invite, Membership, Team
from tests.conftest import lane_size
from tests.evaluate.conftest import blank_run, make_evaluation
from tests.prompts.conftest import make_prompt

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

# Per user: each endpoint gets 2 × 6 requests (2 × 3 on CI's SQLite lane, the docstring says why).
EXAMPLES_PER_ENDPOINT = lane_size(6, sqlite_lane=3)
FRAMES_PER_ACTION = 4  # per user and socket
SOURCE = Path(settings.BASE_DIR) / "playground"
HUGE = "x" * 250_000
DEEP = "[" * 5_000 + "]" * 5_000


# ---------------------------------------------------------------- the surface, found


def url_patterns(patterns=None, namespace=""):
    """(name, pattern) of every URL pattern, namespaced as reverse() wants it."""
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}:{entry.namespace}" if namespace and entry.namespace else entry.namespace or namespace
            yield from url_patterns(entry.url_patterns, inner or "")
        elif isinstance(entry, URLPattern):
            yield (f"{namespace}:{entry.name}" if namespace else entry.name), entry


READ = re.compile(r"""(?:POST|GET|FILES|frame|content|post|data)(?:\.get|\.getlist|\.pop)?[\(\[]\s*f?["']([\w-]+)""")


def numbered(names: set[str]) -> set[str]:
    # Names built with f-strings (model_1, params_2): their prefix, numbered.
    return names | {f"{name}{n}" for name in names if name.endswith(("_", "-")) for n in (1, 2)}


def field_names() -> list[str]:
    """Every field of every form of the project, and every field a view or service reads from a request by name."""
    names = set()
    stack = [forms.Form, forms.ModelForm]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith("playground."):
            names.update(getattr(cls, "base_fields", {}))
    for path in SOURCE.rglob("*.py"):
        names.update(READ.findall(path.read_text()))
    return sorted(numbered(names))


def methods_of(pattern: URLPattern) -> list[str]:
    """GET and POST, or the methods the view's require_http_methods decorator allows (no requests spent on 405s)."""
    view, allowed = pattern.callback, None
    while view is not None and allowed is None:
        closure = inspect.getclosurevars(view).nonlocals if inspect.isfunction(view) else {}
        allowed = closure.get("request_method_list")
        view = getattr(view, "__wrapped__", None)
    methods = [m for m in ("GET", "POST") if allowed is None or m in allowed]
    return methods or ["GET", "POST"]


def fields_of(pattern: URLPattern) -> list[str]:
    """The fields the view's own module reads by name, and those of the forms of its app (drawn first)."""
    view = inspect.unwrap(pattern.callback)
    module = inspect.getmodule(view)
    if module is None or not module.__name__.startswith("playground."):
        return FIELDS
    # The input boundary's own fields (`next`) are read on every route.
    names = set(READ.findall(inspect.getsource(module))) | set(READ.findall((SOURCE / "inputs.py").read_text()))
    for path in Path(module.__file__).parent.glob("forms.py"):
        names.update(re.findall(r"^    (\w+) = forms\.", path.read_text(), re.M))
    return sorted(numbered(names))


ROUTES = list(url_patterns())
FIELDS = field_names()


# ---------------------------------------------------------------- the cast and their things


def things_of(user, other) -> dict:
    """Objects of `user` for the fuzz to aim at (the other user aims at them with foreign ids)."""
    connection = Connection.objects.get(owner=user, is_local=True)
    conversation = Conversation.objects.create(
        owner=user, connection=connection, model_id="local/tools", title=f"{user}'s", params={"temperature": 0.3}
    )
    question = Message.objects.create(conversation=conversation, role="user", content="hi")
    Message.objects.create(
        conversation=conversation,
        parent=question,
        role="assistant",
        content="hello",
        status=Message.COMPLETE,
        tool_calls=[{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    )
    share = Share(owner=user, title="t", source=conversation, live=True)
    share.save()
    freeze(share)
    team = Team.objects.create(name=f"{user}'s team")
    Membership.objects.create(team=team, user=user, role=OWNER)
    invite = Invite.objects.create(team=team, expires=timezone.now() + timezone.timedelta(days=1))
    run = RerankRun.objects.create(
        owner=user,
        connection=connection,
        model="local/rerank",
        query="q",
        documents=["a", "b"],
        params={},
        results=[{"index": 0, "relevance_score": 0.5}],
    )
    evaluation = make_evaluation(user, rows=2, variants=2)
    blank_run(evaluation)  # a run, so that there are cells to aim at
    prompt = make_prompt(user, f"{user}-prompt", versions=2)
    Label.objects.create(prompt=prompt, name="production", version=prompt.versions.get(number=1))
    api_key = ApiToken.mint(user, "fuzz")[1]
    api_token = ApiToken.mint(user, "revocable")[0]  # the one the token routes aim at (the fuzz may revoke it)
    kinds = {
        "conversation": [conversation.pk],
        "message": list(conversation.messages.values_list("pk", flat=True)),
        "share": [share.pk],
        "team": [team.pk],
        "invite": [invite.pk],
        "membership": list(team.memberships.values_list("pk", flat=True)),
        "run": [run.pk],
        "evaluation": [evaluation.pk],
        "case": list(evaluation.cases.values_list("pk", flat=True)),
        "variant": list(evaluation.variants.values_list("pk", flat=True)),
        "cell": list(evaluation.cells.values_list("pk", flat=True)[:2]),
        "connection": [connection.pk],
        "prompt": [prompt.pk],
        "version": list(prompt.versions.values_list("pk", flat=True)),
        "token": [api_token.pk],
    }
    return {
        "api_key": api_key,
        "kinds": kinds,
        "ids": sorted({pk for pks in kinds.values() for pk in pks}),
        "tokens": [share.token, invite.token, prompt.name],  # a prompt's name: the prompt API's argument
    }


# Which kind of object a URL argument names, by its name and the route's namespace. A route this table does not
# know still gets every id of both users (only less often one that exists).
ARGUMENTS = {"mid": "message", "case_pk": "case", "variant_pk": "variant", "cell_pk": "cell", "iid": "invite"}
ARGUMENTS |= {"cid": "connection", "connection_pk": "connection", "other_pk": "run", "vid": "version", "tid": "token"}
NAMESPACES = {"chat": "conversation", "teams": "team", "evaluate": "evaluation", "rerank": "run"}
NAMESPACES |= {"connections": "connection", "catalog": "connection", "prompts": "prompt"}


def aimed_kind(name: str, argument: str) -> str | None:
    if argument in ARGUMENTS:
        return ARGUMENTS[argument]
    namespace = name.split(":")[0]
    if name.startswith("sharing:") and "links" in str(reverse_pattern(name)):
        return "share"
    if name in ("teams:move", "sharing:source", "sharing:code"):
        return "conversation"
    return NAMESPACES.get(namespace)


def reverse_pattern(name: str) -> str:
    return next((str(p.pattern) for n, p in ROUTES if n == name), "")


def owned_rows(user) -> dict:
    """Every row of the project's models that belongs to `user` (by an `owner`, directly or one step away),
    without the counters that another user's visit moves (a share's views)."""
    rows = {}
    for model in apps.get_models():
        if not model.__module__.startswith("playground."):
            continue
        path = ownership(model)
        if path is None:
            continue
        skip = {"views", "last_viewed", "heartbeat"}
        fields = [f.attname for f in model._meta.concrete_fields if f.attname not in skip]
        for values in model.objects.filter(**{path: user}).values(*fields):
            rows[(model._meta.label, values.get("id"))] = values
    return rows


def ownership(model) -> str | None:
    names = {f.name: f for f in model._meta.get_fields()}
    if "owner" in names:
        return "owner"
    for column in model._meta.concrete_fields:
        if isinstance(column, models.ForeignKey) and "owner" in {f.name for f in column.related_model._meta.fields}:
            return f"{column.name}__owner"
    return None


def stored_nul() -> list[str]:
    """Where a NUL character is stored, in any text or JSON column of any table of the project."""
    found = []
    for model in apps.get_models():
        if not model.__module__.startswith("playground."):
            continue
        columns = [f.attname for f in model._meta.concrete_fields if isinstance(f, models.CharField | models.TextField)]
        columns += [f.attname for f in model._meta.concrete_fields if isinstance(f, models.JSONField)]
        for values in model.objects.values("pk", *columns):
            if "\\u0000" in json.dumps(values, default=str) or "\x00" in json.dumps(values, default=str):
                found.append(f"{model._meta.label} {values['pk']}")
    return found


class LogWatch(logging.Handler):
    """Every record at WARNING or above with a traceback, and every ERROR."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.records = []

    def emit(self, record):
        if record.exc_info or record.levelno >= logging.ERROR:
            self.records.append(f"{record.name}: {record.getMessage()[:300]}")


@pytest.fixture
def world(alice, bob, catalog, settings, monkeypatch):
    # Nothing leaves the machine: the upstream is a closed port, and no other host may be reached.
    settings.LOCAL_API_BASE_URL = f"http://127.0.0.1:{free_port()}/local/v1"
    settings.ALLOWED_UPSTREAM_HOSTS = ["127.0.0.1"]
    watch = LogWatch()
    logging.getLogger().addHandler(watch)
    yield {"alice": things_of(alice, bob), "bob": things_of(bob, alice), "log": watch}
    logging.getLogger().removeHandler(watch)


@pytest.fixture
async def closing():
    """The async tests' database work runs in asgiref's thread: its connections close there (PostgreSQL would
    otherwise refuse to drop the test database at the end of the session)."""
    yield
    await sync_to_async(connections.close_all)()


# ---------------------------------------------------------------- what goes in


def bad_values(ids) -> st.SearchStrategy:
    return st.one_of(
        st.sampled_from(
            [
                "abc",
                "",
                "-1",
                "0",
                "1.5",
                "NaN",
                "-Infinity",
                "1e999",
                "99999999999999999999999",
                "٣",
                "a\x00b",
                "\x00",
                HUGE,
                DEEP,
                '{"a": ' * 2000 + "1" + "}" * 2000,
                '{"stop": [1, 2], "temperature": "hot"}',
                "[1, 2]",
                "/",
                "//evil.example/",
                "true",
                "on",
                "user",
                "assistant",
                "json",
                "conversation",
            ]
        ),
        st.sampled_from(ids).map(str),
        st.text(max_size=40),
    )


@st.composite
def requests(draw, ids, tokens, fields, methods):
    """One request: method, form fields (some repeated, some unknown), maybe a file, maybe a raw body."""
    value = st.one_of(bad_values(ids), bad_values(ids), st.lists(bad_values(ids), max_size=3))
    # The view's own fields, each present or missing; then extra ones (any form's, or unknown). Hypothesis starts
    # from its simplest example: every field of the view, each "abc" (a non-integer id, a `next` that is no path),
    # on the user's own object.
    absent = draw(st.lists(st.booleans(), min_size=len(fields), max_size=len(fields)))
    data = {name: draw(value) for name, gone in zip(fields, absent, strict=True) if not gone}
    extra = st.one_of(st.sampled_from(FIELDS), st.text(min_size=1, max_size=12))
    data |= draw(st.dictionaries(extra, value, max_size=3))
    kind = draw(st.sampled_from(["form", "form", "file", "json", "raw"]))
    body = None
    if kind == "file":
        payload = draw(st.sampled_from([b"\xff\xfe\x00bad utf-8", DEEP.encode(), b"question\na\x00b\n", b""]))
        data[draw(st.sampled_from(fields))] = SimpleUploadedFile(draw(st.sampled_from(["x.json", "a.csv"])), payload)
    elif kind == "json":
        body = draw(st.sampled_from([DEEP, '{"a": NaN}', '{"a": "\\u0000"}', "[]", json.dumps({"messages": 5})]))
    elif kind == "raw":
        body = draw(st.sampled_from([b"\xff\xfe\xfd", b"a=%FF%FE&b=%00", b"--x\r\nbroken multipart"]))
    return {
        "method": draw(st.sampled_from(methods)),
        "data": data,
        "body": body,
        "htmx": draw(st.booleans()),
    }


def kwargs_for(route: str, pattern: URLPattern, own: dict, other: dict, ids, tokens) -> st.SearchStrategy:
    """Values for the pattern's URL arguments: ids of the user's own object of the kind the argument names and of
    the other user's (a foreign id), any id of either, ids of nothing, tokens, text."""
    names = list(pattern.pattern.regex.groupindex)
    converters = getattr(pattern.pattern, "converters", {})
    values = {}
    for name in names:
        converter = type(converters.get(name)).__name__
        kind = aimed_kind(route, name)
        if converter == "IntConverter":
            aimed = (
                [st.sampled_from(own[kind]), st.sampled_from(own[kind]), st.sampled_from(other[kind])] if kind else []
            )
            values[name] = st.one_of(*aimed, st.sampled_from(ids), st.sampled_from([0, 2**63, 10**30]))
        elif name == "token":
            values[name] = st.one_of(st.sampled_from(tokens), st.just("A" * 32))
        else:
            safe = st.text(st.characters(blacklist_characters="/", blacklist_categories=("Cs",)), min_size=1)
            words = st.sampled_from(
                ["conversation", "rerank", "speech", "batch", "evaluation", "prompt", "json", "md", "csv"]
            )
            values[name] = st.one_of(words, safe.filter(lambda s: s not in (".", "..")), st.sampled_from(tokens))
    return st.fixed_dictionaries(values)


def url_of(name: str, kwargs: dict) -> str | None:
    try:
        return reverse(name, kwargs=kwargs)
    except Exception:  # the drawn value does not fit the pattern (e.g. a token of the wrong shape)
        return None


async def send(client: AsyncClient, url: str, request: dict, key: str, api_key: str = ""):
    headers = {"HX-Request": "true"} if request["htmx"] else {}
    if url.startswith("/local/"):
        headers["Authorization"] = f"Bearer {key}"
    if url.startswith("/api/prompts/"):
        headers["Authorization"] = f"Bearer {api_key}"
    if request["method"] == "GET":
        data = {k: v for k, v in request["data"].items() if not hasattr(v, "read")}
        return await client.get(url, data, headers=headers)
    if request["body"] is not None:
        content_type = "application/json" if isinstance(request["body"], str) else "application/x-www-form-urlencoded"
        return await client.post(url, request["body"], content_type=content_type, headers=headers)
    return await client.post(url, request["data"], headers=headers)


# ---------------------------------------------------------------- the fuzz


@dataclass
class Round:
    """One user's pass over every route: who, with what, and what came back."""

    user: object
    victim: object
    things: dict
    watch: LogWatch
    sent: int = 0
    statuses: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)

    def __post_init__(self):
        self.key = Connection.objects.get(owner=self.user, is_local=True).get_key()
        self.api_key = self.things[self.user.username]["api_key"]
        mine, theirs = self.things[self.user.username], self.things[self.victim.username]
        self.ids = sorted({*mine["ids"], *theirs["ids"]})
        self.tokens = mine["tokens"] + theirs["tokens"]
        self.own, self.other = mine["kinds"], theirs["kinds"]
        # The test's own event loop serves the requests, so work a view leaves running (a generation, a clip's
        # relay) goes on between requests as it would in the server.
        self.client = AsyncClient(raise_request_exception=False)

    def examples(self, name: str, pattern: URLPattern) -> list[tuple[str, dict]]:
        """The route's requests: EXAMPLES_PER_ENDPOINT of them, the same on every run."""
        drawn = []

        @seed(22)
        @hypothesis_settings(
            # Django's admin answers a non-staff user with its login page, whatever the input: one example there.
            max_examples=1 if name.startswith("admin:") else EXAMPLES_PER_ENDPOINT,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(
            kwargs=kwargs_for(name, pattern, self.own, self.other, self.ids, self.tokens),
            request=requests(self.ids, self.tokens, fields_of(pattern), methods_of(pattern)),
        )
        def collect(kwargs, request):
            url = url_of(name, kwargs)
            if url is not None:
                drawn.append((url, request))

        collect()
        return drawn

    async def signed_in(self) -> bool:
        request = HttpRequest()
        request.session = await self.client.asession()
        return (await aget_user(request)).pk == self.user.pk

    async def send(self, name: str, url: str, request: dict) -> None:
        self.watch.records.clear()
        # Signed in again before any request the session would not sign in: any page may end it (logout, a
        # password change, a sign-out of another kind a new app brings), and the next route must not be tried signed
        # out. Asked as the next request's middleware will ask (the session's row, its user and password hash): a
        # login before every request was a fifth of the test's time.
        if not await self.signed_in():
            await self.client.aforce_login(self.user)
        response = await send(self.client, url, request, self.key, self.api_key)
        self.sent += 1
        self.statuses[response.status_code] = self.statuses.get(response.status_code, 0) + 1
        shown = {k[:20]: (v if isinstance(v, str | list) else "<file>") for k, v in request["data"].items()}
        what = f"{self.user} {request['method']} {url[:80]} ({name}) {str(shown)[:200]} body={request['body']!r:.40}"
        if response.status_code >= 500:
            self.problems.append(f"{what}: {response.status_code}")
        if self.watch.records:
            self.problems.append(f"{what}: logged {self.watch.records[0]}")


async def fuzz_routes(user, victim, things, watch) -> Round:
    """Every route, EXAMPLES_PER_ENDPOINT requests as `user`; and whether anything of `victim`'s changed."""
    round_ = await sync_to_async(Round)(user, victim, things, watch)
    before = await sync_to_async(owned_rows)(victim)
    # FUZZ_ONLY=prompts,chat:from-prompt narrows a local run to the routes named (by prefix); CI runs them all.
    only = tuple(filter(None, os.environ.get("FUZZ_ONLY", "").split(",")))
    for name, pattern in ROUTES:
        if only and not (name or "").startswith(only):
            continue
        for url, request in await sync_to_async(round_.examples)(name, pattern):
            await round_.send(name, url, request)
    await settle()
    after = await sync_to_async(owned_rows)(victim)
    changed = [key for key in before.keys() | after.keys() if before.get(key) != after.get(key)]
    round_.problems += [f"{user} changed {victim}'s {key}: {before.get(key)} -> {after.get(key)}" for key in changed]
    print(f"\n{user}: statuses {dict(sorted(round_.statuses.items()))}")
    return round_


async def settle(timeout: float = 20) -> None:
    """Wait for the work the requests left running (it ends quickly: the upstream is a closed port)."""
    running = [task for task in detached._tasks if not task.done()]
    if running:
        await asyncio.wait(running, timeout=timeout)


@pytest.mark.slow  # every route times every kind of bad value: the longest test outside the browser
async def test_every_url_answers_bad_input_without_a_5xx_or_a_traceback_and_touches_nothing_of_the_other_user(
    world, alice, bob, closing
):
    started = time.monotonic()
    by_bob = await fuzz_routes(bob, alice, world, world["log"])
    by_alice = await fuzz_routes(alice, bob, world, world["log"])
    problems = by_bob.problems + by_alice.problems
    problems += [f"NUL stored: {where}" for where in await sync_to_async(stored_nul)()]
    print(
        f"\nfuzz: {len(ROUTES)} URL patterns, {len(FIELDS)} field names, {EXAMPLES_PER_ENDPOINT} examples per "
        f"endpoint and user, {by_bob.sent + by_alice.sent} requests in {time.monotonic() - started:.1f} s"
    )
    assert not problems, "\n".join(problems[:40])


# ---------------------------------------------------------------- websockets


def consumers() -> list[tuple[str, type]]:
    """(route, consumer class) of every websocket route."""
    found = []
    for pattern in websocket_urlpatterns:
        consumer = pattern.callback.consumer_class
        found.append((str(pattern.pattern), consumer))
    return found


def socket_path(route: str, things: dict, alice) -> str:
    """The route for one of alice's objects (the conversation, the share's token or the evaluation)."""
    if "token" in route:
        return f"/ws/s/{things['tokens'][0]}/"
    prefix = route.split("<")[0]
    if "evaluate" in prefix:
        from playground.evaluate.models import Evaluation

        return f"/{prefix}{Evaluation.objects.filter(owner=alice).first().pk}/"
    return f"/{prefix}{Conversation.objects.filter(owner=alice).first().pk}/"


@st.composite
def frames(draw, kind: str, ids):
    names = st.one_of(st.sampled_from(FIELDS), st.text(min_size=1, max_size=12))
    fields = draw(st.dictionaries(names, st.one_of(bad_values(ids), st.integers(), st.none()), max_size=6))
    frame = {**fields, "action": kind} if draw(st.booleans()) else {**fields, "type": kind}
    frame["id"] = draw(st.sampled_from(["f1", "", None, 5, "no spaces allowed", "x" * 65]))
    return json.dumps(frame)


async def test_every_websocket_action_answers_bad_frames_once_and_keeps_the_socket_open(world, alice, bob, closing):
    routes = consumers()
    ids = await sync_to_async(lambda: world["alice"]["ids"] + world["bob"]["ids"])()
    assert routes and all(issubclass(consumer, FrameConsumer) for _, consumer in routes)
    started = time.monotonic()
    problems: list[str] = []
    counted = {"frames": 0, "actions": 0}

    async def fuzz(route, consumer, user):
        path = await sync_to_async(socket_path)(route, world["alice"], alice)
        headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
        ws = WebsocketCommunicator(application, path, headers=headers)
        ws.scope["user"] = user
        await ws.connect(timeout=10)
        if not await ws.receive_nothing(timeout=0.5):
            # Another user's conversation or evaluation: the socket closes at once (a public share stays open).
            closed = await ws.receive_output(timeout=5)
            if user == alice or closed.get("code") not in (4403, 4404):
                problems.append(f"{user} on {path}: {closed}")
            return
        for kind in consumer.frame_kinds():
            counted["actions"] += 1
            for text in drawn(kind):
                counted["frames"] += 1
                await ws.send_to(text_data=text)
                # A probe after each frame: the socket is still open and has answered the frame before it.
                await ws.send_to(text_data=json.dumps({"action": "probe", "id": "probe"}))
                replies = []
                while True:
                    try:
                        reply = await ws.receive_json_from(timeout=10)
                    except (TimeoutError, AssertionError):
                        # (the communicator ends the consumer when a wait times out)
                        problems.append(f"{path} {kind}: no answer after {text[:200]} (replies: {replies[:3]})")
                        return
                    if reply.get("id") == "probe":
                        break
                    replies.append(reply)
                frame = json.loads(text)
                if frame.get("id") == "f1" and kind in consumer_actions(consumer):
                    answers = [r for r in replies if r.get("id") == "f1"]
                    if len(answers) != 1:
                        problems.append(f"{path} {kind}: {len(answers)} replies to one frame: {replies[:3]}")
        await ws.send_to(bytes_data=b"\xff\x00")
        if (await ws.receive_json_from(timeout=5))["type"] != "invalid":
            problems.append(f"{path}: a binary frame was not answered invalid")
        await ws.disconnect()

    def drawn(kind):
        examples = []

        @seed(22)
        @hypothesis_settings(max_examples=FRAMES_PER_ACTION, derandomize=True, database=None, deadline=None)
        @given(frames(kind, ids))
        def collect(text):
            examples.append(text)

        collect()
        return examples

    async def run():
        for route, consumer in routes:
            for user in (alice, bob):
                await fuzz(route, consumer, user)

    await run()
    await settle()
    problems += [f"NUL stored: {where}" for where in await sync_to_async(stored_nul)()]
    problems += [f"logged: {record}" for record in world["log"].records]
    print(
        f"\nfuzz: {len(routes)} websocket routes, {counted['actions']} actions, {FRAMES_PER_ACTION} frames per "
        f"action, {counted['frames']} frames in {time.monotonic() - started:.1f} s"
    )
    assert not problems, "\n".join(problems[:40])


def consumer_actions(consumer) -> set[str]:
    """The kinds of frame that carry an id and promise one reply: the chat's registered actions."""
    from playground.chat.actions import ACTIONS
    from playground.chat.consumers import ChatConsumer

    return set(ACTIONS) if consumer is ChatConsumer else set()
