"""Every path that can spend a team's key goes through the gate, found from the URL resolver and the websocket action
registry, so a new view or action cannot be forgotten: each is in CALLING (with a recipe that reaches the provider)
or in NOT_CALLING (with the reason it never does), and the test fails on any route or action in neither.

Each CALLING recipe first runs as allowed (at least one request reaches the counting fake provider: the recipe
really reaches it), then with the requester removed from the team, with the connection revoked and with the
budget spent: zero requests reach the provider each time.
"""

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db.models import Sum
from django.test import AsyncClient
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from playground.asgi import application
from playground.batches.models import Batch
from playground.catalog.services import refresh_models
from playground.chat import actions
from playground.chat.models import Conversation, Message
from playground.chat.relay import fanout
from playground.chat.send_cache import SendCache
from playground.connections import gate
from playground.connections.models import Connection, Lease
from playground.evaluate import services as evaluations
from playground.evaluate.models import Cell
from playground.prompts.models import Prompt, PromptVersion
from playground.rerank.models import RerankRun
from playground.sharing.models import Share
from playground.speech.models import SpeechClip
from playground.teams.models import Membership, UsageRecord
from tests.fakeprovider import server as fake
from tests.teams.conftest import make_team_connection

pytestmark = pytest.mark.django_db(transaction=True)

HX = {"HX-Request": "true"}
WEATHER = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]

# Routes that never call a provider with a stored key, and why. Namespaces listed whole: admin (no upstream call),
# localapi (it *is* a provider: the spec-faithful local API, reached over HTTP like any other).
NOT_CALLING_NAMESPACES = {"admin", "localapi"}
NOT_CALLING = {
    **dict.fromkeys(
        ["accounts:signup", "accounts:login", "accounts:logout", "accounts:password_change"],
        "accounts",
    ),
    "accounts:password_change_done": "accounts",
    **dict.fromkeys(
        ["sso:login", "sso:callback", "sso:logout"], "single sign-on: the identity provider, not a model provider"
    ),
    **dict.fromkeys(["operators:users", "operators:deactivate", "operators:reactivate"], "the administration page"),
    **dict.fromkeys(["health-live", "health-ready", "metrics"], "probes and metrics read this server only"),
    "connections:index": "a list",
    "connections:create": "its catalog refresh uses only the key typed in the same request (through the gate)",
    "connections:edit": "saves; a changed host needs the key again (test_key_binding.py)",
    "connections:delete": "deletes",
    "connections:rotate_key": "the Local connection's minted key",
    **dict.fromkeys(
        [
            "teams:index",
            "teams:join",
            "teams:detail",
            "teams:delete",
            "teams:leave",
            "teams:transfer",
            "teams:invite",
            "teams:revoke_invite",
            "teams:remove_member",
            "teams:set_role",
            "teams:set_budget",
            "teams:set_team_budget",
            "teams:edit_connection",
            "teams:revoke_connection",
            "teams:delete_connection",
            "teams:usage",
            "teams:usage_csv",
            "teams:audit",
        ],
        "team management and reports",
    ),
    "teams:add_connection": "its catalog refresh uses only the key typed in the same request (through the gate)",
    "teams:add_local_connection": "mints the team's key for this site's local API in-process; nothing is sent",
    **dict.fromkeys(["catalog:picker", "catalog:index", "catalog:add", "catalog:edit"], "the stored catalog"),
    **dict.fromkeys(
        ["rerank:index", "rerank:fields", "rerank:detail", "rerank:delete", "rerank:comparison"], "stored runs"
    ),
    **dict.fromkeys(
        [
            "speech:stream",
            "speech:status",
            "speech:download",
            "speech:download-variant",
            "speech:delete",
        ],
        "a stored clip",
    ),
    **dict.fromkeys(["batches:index", "batches:metadata-row"], "stored batches"),
    **dict.fromkeys(
        [
            "evaluate:index",
            "evaluate:create",
            "evaluate:detail",
            "evaluate:delete",
            "evaluate:prompt",
            "evaluate:diff",
            "evaluate:cases",
            "evaluate:import",
            "evaluate:delete-case",
            "evaluate:add-variant",
            "evaluate:variant",
            "evaluate:delete-variant",
            "evaluate:rate",
            "evaluate:run",
            "evaluate:compare",
            "evaluate:share-compare",
            "evaluate:export-compare",
            "evaluate:export",
        ],
        "the stored grid (live runs start over the evaluation's websocket: see the test at the end)",
    ),
    **dict.fromkeys(
        [
            "sharing:index",
            "sharing:watching",
            "speech:voice-code",
            "sharing:export",
            "sharing:import",
            "sharing:code",
            "sharing:revoke",
            "sharing:edit",
            "sharing:view",
            "sharing:file",
            "sharing:fork",
        ],
        "frozen copies; a fork sends nothing until its new owner does (freezing a batch reads its files: CALLING)",
    ),
    **dict.fromkeys(
        [
            "chat:index",
            "chat:search",
            "chat:conversation",
            "chat:rename",
            "chat:duplicate",
            "chat:delete",
            "chat:settings",
            "chat:panel",
            "chat:request_preview",
            "chat:stop",
            "chat:copy_tools",
            "chat:start_picker",
            "chat:choose",
            "chat:switch",
            "chat:delete_message",
            "chat:pick",
            "chat:insert",
            "chat:attachment",
        ],
        "the stored thread",
    ),
    "chat:save-prompt": "saves the conversation's setup as a prompt version",
    **dict.fromkeys(
        [
            "prompts:index",
            "prompts:new",
            "prompts:import",
            "prompts:fields",
            "prompts:tokens",
            "prompts:revoke-token",
            "prompts:detail",
            "prompts:edit",
            "prompts:compare",
            "prompts:label",
            "prompts:protect",
            "prompts:delete",
            "prompts:export",
            "prompts:version",
            "prompts:restore",
            "prompts:improve-accept",
            "prompts-api",
        ],
        "stored prompt versions (the API returns the compiled request: it sends nothing)",
    ),
    **dict.fromkeys(
        [
            "datasets:index",
            "datasets:create",
            "datasets:import",
            "datasets:add",
            "datasets:detail",
            "datasets:save",
            "datasets:blank-row",
            "datasets:versions",
            "datasets:import-version",
            "datasets:delete",
            "datasets:restore",
            "datasets:export",
        ],
        "stored dataset versions",
    ),
    "evaluate:use-dataset": "replaces the stored test cases",
}
NOT_CALLING_ACTIONS = {
    "delete": "the stored thread",
    "insert": "no answer",
    "pick": "selects",
    "switch": "selects",
    "choose": "swaps an answer with one of its stored choices",
}


@dataclass
class Scene:
    """What the recipes need, made fresh for each run: bob's conversations, runs, batches and evaluation."""

    connection: Connection
    conversation: Conversation
    question: Message
    answer: Message  # ended in an error: it can be retried, regenerated, and its question edited
    tools: Conversation
    called: Message
    run: RerankRun
    batch: Batch
    evaluation: object


def make_scene(connection: Connection, bob) -> Scene:
    conversation = Conversation.objects.create(owner=bob, connection=connection, model_id=fake.CHAT_MODEL)
    question = Message.objects.create(conversation=conversation, role="user", content="Name a river.")
    answer = Message.objects.create(
        conversation=conversation, role="assistant", status=Message.ERROR, content="The", parent=question
    )
    tools = Conversation.objects.create(
        owner=bob, connection=connection, model_id=fake.TOOLS_MODEL, params={"tools": WEATHER}
    )
    asked = Message.objects.create(conversation=tools, role="user", content="Weather in Paris?")
    called = Message.objects.create(
        conversation=tools,
        role="assistant",
        parent=asked,
        finish_reason="tool_calls",
        tool_calls=[{"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
    )
    run = RerankRun.objects.create(
        owner=bob, connection=connection, model="old-reranker", query="q", documents=["a", "b"], params={}
    )
    batch = Batch.objects.create(
        owner=bob,
        connection=connection,
        remote_id="batch_1",
        input_file_id="file_in",
        input_filename="in.jsonl",
        status="in_progress",
        output_file_id="file_out",
    )
    evaluation = evaluations.create(user=bob, title="Grid", connection=connection)
    evaluation.cases.update(values={"question": "Name a river."})
    with_batch = evaluations.create(user=bob, title="Batched", connection=connection)
    later = Batch.objects.create(
        owner=bob,
        connection=connection,
        remote_id="batch_2",
        input_file_id="file_in",
        input_filename="in.jsonl",
        status="in_progress",
    )
    with_batch.batch = later
    with_batch.save()
    scene = Scene(connection, conversation, question, answer, tools, called, run, batch, evaluation)
    asked = {"model": fake.CHAT_MODEL, "messages": [{"role": "user", "content": "Name a river."}]}
    scene.forked = Batch.objects.create(
        owner=bob, connection=connection, remote_id="fork of batch_1", copy={"requests": [asked], "rows": []}
    )
    scene.batched = with_batch
    scene.share = Share(owner=bob, kind="batch", title="Batch")
    scene.share.source = batch
    scene.share.set_expiry("7d")
    scene.share.save()
    scene.prompt = Prompt.objects.create(owner=bob, name=f"rivers-{Prompt.objects.count()}")
    scene.version = PromptVersion(
        prompt=scene.prompt, number=1, author=bob, template="Name a {{thing}}.", model_id=fake.CHAT_MODEL
    )
    scene.version.connection = connection
    scene.version.save()
    scene.clip = SpeechClip.objects.create(
        owner=bob, connection=connection, model=fake.SPEECH_MODEL, text="[S1] Hi.", voice=f"{fake.SPEECH_MODEL}:alex"
    )
    return scene


def _pk(s: Scene) -> list:
    return [s.conversation.pk]


# Each provider-calling route: (method, url, data) from a scene. Several recipes may exercise one route (n > 1).
CALLING: dict[str, list[Callable[[Scene], tuple[str, str, dict]]]] = {
    "chat:send": [
        lambda s: ("post", reverse("chat:send", args=_pk(s)), {"content": "Name a lake."}),
        lambda s: ("post", reverse("chat:send", args=_pk(s)), {"content": "Two lakes.", "n": "2"}),
    ],
    "chat:create": [
        lambda s: (
            "post",
            reverse("chat:create"),
            {"content": "Name a sea.", "connection": s.connection.pk, "model": fake.CHAT_MODEL},
        )
    ],
    "chat:retry": [lambda s: ("post", reverse("chat:retry", args=[s.conversation.pk, s.answer.pk]), {})],
    "chat:regenerate": [lambda s: ("post", reverse("chat:regenerate", args=[s.conversation.pk, s.answer.pk]), {})],
    "chat:edit": [
        lambda s: (
            "post",
            reverse("chat:edit", args=[s.conversation.pk, s.question.pk]),
            {"content": "Name a long river."},
        )
    ],
    "chat:compare": [
        lambda s: (
            "post",
            reverse("chat:compare", args=_pk(s)),
            {"content": "Name a bay.", "model_1": fake.CHAT_MODEL, "model_2": fake.TOOLS_MODEL},
        )
    ],
    # A chat from a prompt version sends its first message; Improve asks the judge model.
    "chat:from-prompt": [
        lambda s: ("post", reverse("chat:from-prompt", args=[s.version.pk]), {"var_thing": "river"}),
    ],
    "prompts:improve": [
        lambda s: (
            "post",
            reverse("prompts:improve", args=[s.prompt.pk]),
            {"connection": s.connection.pk, "model": fake.CHAT_MODEL, "instruction": "shorter"},
        )
    ],
    "chat:tool_results": [
        lambda s: ("post", reverse("chat:tool_results", args=[s.tools.pk, s.called.pk]), {"result:call_a": "18 C"})
    ],
    "rerank:run": [
        lambda s: (
            "post",
            reverse("rerank:run"),
            {
                "connection": s.connection.pk,
                "model": fake.RERANK_MODEL,
                "query": "rivers",
                "documents": "a river\na hill",
                "documents_format": "lines",
            },
        )
    ],
    "rerank:compare": [lambda s: ("post", reverse("rerank:compare", args=[s.run.pk]), {"model": fake.RERANK_MODEL})],
    "speech:create": [
        lambda s: (
            "post",
            reverse("speech:create"),
            {
                "connection": s.connection.pk,
                "model": fake.SPEECH_MODEL,
                "input": "[S1] Hello.",
                "voice": f"{fake.SPEECH_MODEL}:alex",
                "response_format": "mp3",
                "sample_rate": "44100",
                "speed": "1",
                "gain": "0",
            },
        )
    ],
    "speech:index": [lambda s: ("get", reverse("speech:index") + f"?connection={s.connection.pk}", {})],
    "speech:voices": [lambda s: ("get", reverse("speech:voices") + f"?connection={s.connection.pk}", {})],
    # The speech form lists the connection's custom voices (a provider call through the gate).
    "speech:fields": [
        lambda s: ("get", reverse("speech:fields") + f"?connection={s.connection.pk}&model={fake.SPEECH_MODEL}", {})
    ],
    "speech:clip": [lambda s: ("get", reverse("speech:clip", args=[s.clip.pk]), {})],
    "speech:voice-preview": [
        lambda s: (
            "post",
            reverse("speech:voice-preview"),
            {"connection": s.connection.pk, "model": fake.SPEECH_MODEL, "uri": f"{fake.SPEECH_MODEL}:alex"},
        )
    ],
    "batches:create": [
        lambda s: (
            "post",
            reverse("batches:create"),
            {
                "connection": str(s.connection.pk),
                "source": "prompts",
                "model": fake.CHAT_MODEL,
                "prompts": "Name a colour.",
                "completion_window": "24h",
                "metadata_key": [""],
                "metadata_value": [""],
            },
        )
    ],
    "batches:from-prompt": [
        lambda s: (
            "post",
            reverse("batches:from-prompt", args=[s.version.pk]),
            {
                "connection": str(s.connection.pk),
                "model": fake.CHAT_MODEL,
                "rows": '{"thing": "river"}',
                "completion_window": "24h",
            },
        )
    ],
    "batches:refresh": [lambda s: ("get", reverse("batches:refresh", args=[s.batch.pk]), {})],
    "batches:cancel": [lambda s: ("post", reverse("batches:cancel", args=[s.batch.pk]), {})],
    "batches:resubmit": [
        lambda s: ("post", reverse("batches:resubmit", args=[s.forked.pk]), {"connection": s.connection.pk})
    ],
    "batches:results": [lambda s: ("get", reverse("batches:results", args=[s.batch.pk]), {})],
    "batches:download": [lambda s: ("get", reverse("batches:download", args=[s.batch.pk, "output"]), {})],
    # Sharing a batch (a link, the team library) freezes its files, read from the provider through the gate.
    "sharing:source": [
        lambda s: (
            "post",
            reverse("sharing:source", args=["batch", s.batch.pk]),
            {"visibility": Share.ANYONE, "expiry": "7d"},
        )
    ],
    "sharing:update": [lambda s: ("post", reverse("sharing:update", args=[s.share.pk]), {})],
    "teams:move": [
        lambda s: ("post", reverse("teams:move", args=["batch", s.batch.pk]), {"team": s.connection.team_id})
    ],
    "evaluate:batch": [lambda s: ("post", reverse("evaluate:batch", args=[s.evaluation.pk]), {})],
    "evaluate:batch-status": [lambda s: ("get", reverse("evaluate:batch-status", args=[s.batched.pk]), {})],
    "evaluate:batch-cancel": [lambda s: ("post", reverse("evaluate:batch-cancel", args=[s.batched.pk]), {})],
}
# Routes a manager uses on the team connection (alice, the team's owner, is the requester).
MANAGER_CALLING: dict[str, Callable[[Scene], tuple[str, str, dict]]] = {
    "connections:test": lambda s: ("post", reverse("connections:test", args=[s.connection.pk]), {}),
    "catalog:refresh": lambda s: ("post", reverse("catalog:refresh", args=[s.connection.pk]), {}),
}
# The never-with-a-team-key routes: refused for every team connection before the gate (TEAM_VOICES).
TEAM_NEVER = {
    "speech:voice-upload": lambda s: (
        "post",
        reverse("speech:voice-upload"),
        {"connection": s.connection.pk, "model": fake.SPEECH_MODEL, "custom_name": "x", "text": "x"},
    ),
    "speech:voice-delete": lambda s: (
        "post",
        reverse("speech:voice-delete"),
        {"connection": s.connection.pk, "model": fake.SPEECH_MODEL, "uri": "speech:voice:1"},
    ),
}
CALLING_ACTIONS: dict[str, Callable[[Scene], tuple[int, dict]]] = {
    "send": lambda s: (s.conversation.pk, {"content": "Name a lake."}),
    "retry": lambda s: (s.conversation.pk, {"message_id": s.answer.pk}),
    "regenerate": lambda s: (s.conversation.pk, {"message_id": s.answer.pk}),
    "edit": lambda s: (s.conversation.pk, {"message_id": s.question.pk, "content": "Name a long river."}),
    "compare": lambda s: (
        s.conversation.pk,
        {"content": "Name a bay.", "model_1": fake.CHAT_MODEL, "model_2": fake.TOOLS_MODEL},
    ),
    "tool_results": lambda s: (s.tools.pk, {"message_id": s.called.pk, "result:call_a": "18 C"}),
}


def route_names() -> set[str]:
    def walk(patterns, namespace):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = pattern.namespace
                yield from walk(
                    pattern.url_patterns, f"{namespace}:{inner}" if namespace and inner else inner or namespace
                )
            elif isinstance(pattern, URLPattern) and pattern.name:
                yield f"{namespace}:{pattern.name}" if namespace else pattern.name

    return {
        name for name in walk(get_resolver().url_patterns, None) if name.split(":")[0] not in NOT_CALLING_NAMESPACES
    }


def test_every_route_and_action_is_classified():
    """A new route or websocket action must be put in a table: provider-calling (with a recipe) or not (why)."""
    calling = set(CALLING) | set(MANAGER_CALLING) | set(TEAM_NEVER)
    routes = route_names()
    assert not calling & set(NOT_CALLING)
    assert routes - calling - set(NOT_CALLING) == set(), "classify these routes in tests/teams/test_gate_paths.py"
    assert (calling | set(NOT_CALLING)) - routes == set(), "these names are no longer routes"
    assert set(actions.ACTIONS) == set(CALLING_ACTIONS) | set(NOT_CALLING_ACTIONS)
    assert not set(CALLING_ACTIONS) & set(NOT_CALLING_ACTIONS)


# ---------------------------------------------------------------- the runs


@pytest.fixture
def setup(live_server, team, alice, bob, fake_openai, settings):
    settings.GATE_DEFAULT_RESERVATION = 50
    connection = make_team_connection(team, alice, base_url=fake_openai.base_url, key=fake_openai.key)
    from asgiref.sync import async_to_sync

    message, ok = async_to_sync(refresh_models)(connection, alice)
    assert ok, message
    return connection


def condition(name: str, team, user, connection) -> None:
    """Put the world in one of the states the gate must refuse (or leave it allowed)."""
    Membership.objects.filter(team=team, user=user).update(monthly_token_budget=None)
    Connection.objects.filter(pk=connection.pk).update(revoked=False)
    if not Membership.objects.filter(team=team, user=user).exists():
        Membership.objects.create(team=team, user=user, role="owner" if user.username == "alice" else "member")
    if name == "removed":
        Membership.objects.filter(team=team, user=user).delete()
    elif name == "revoked":
        Connection.objects.filter(pk=connection.pk).update(revoked=True)
    elif name == "spent":
        Membership.objects.filter(team=team, user=user).update(monthly_token_budget=0)


STATES = ["removed", "revoked", "spent"]


async def settle_all() -> None:
    """Wait for what a request started in this process (generations, clips, cells) to end."""
    from playground.lib import detached

    for _ in range(400):
        tasks = [t for t in detached._tasks if not t.done() and t.get_name() != "background-runner"]
        if not tasks:
            return
        await asyncio.sleep(0.05)


async def through_http(recipe, scene, user, answer: list | None = None) -> int:
    method, url, data = recipe(scene)
    http = AsyncClient()
    await http.aforce_login(user)
    response = (
        await getattr(http, method)(url, data, headers=HX) if data else await getattr(http, method)(url, headers=HX)
    )
    await settle_all()
    if answer is not None:
        answer.append(response.content.decode())
    return response.status_code


def _fresh(setup, team, user, bob, state):
    condition(state, team, user, setup)
    return make_scene(setup, bob)


@pytest.mark.parametrize("name", sorted(CALLING) + sorted(MANAGER_CALLING))
async def test_each_provider_calling_route_is_refused_with_zero_requests(name, setup, team, alice, bob, fake_openai):
    recipes = CALLING.get(name) or [MANAGER_CALLING[name]]
    user = alice if name in MANAGER_CALLING else bob
    for recipe in recipes:
        scene = await sync_to_async(_fresh)(setup, team, user, bob, "allowed")
        fake_openai.state.requests.clear()
        status = await through_http(recipe, scene, user)
        assert fake_openai.state.requests, f"{name}: the recipe never reached the provider ({status})"
        for state in STATES:
            scene = await sync_to_async(_fresh)(setup, team, user, bob, state)
            fake_openai.state.requests.clear()
            status = await through_http(recipe, scene, user)
            assert fake_openai.state.requests == [], f"{name} sent a request with the requester {state} ({status})"
    assert await Lease.objects.acount() == 0, "a lease was left behind"


@pytest.mark.parametrize("name", sorted(TEAM_NEVER))
async def test_custom_voices_of_a_team_key_are_never_changed(name, setup, team, bob, fake_openai):
    for state in ["allowed", *STATES]:
        scene = await sync_to_async(_fresh)(setup, team, bob, bob, state)
        fake_openai.state.requests.clear()
        await through_http(TEAM_NEVER[name], scene, bob)
        sent = [r for r in fake_openai.state.requests if r["method"] == "POST" or state != "allowed"]
        assert sent == []  # allowed, the page lists the voices again (a GET through the gate), nothing else


async def through_socket(name, recipe, scene, user) -> dict:
    conversation_id, fields = recipe(scene)
    replies = []

    async def reply(frame):
        replies.append(frame)

    await actions.run(user, conversation_id, {"action": name, "id": "t1", **fields}, reply)
    await settle_all()
    return replies[0] if replies else {}


@pytest.mark.parametrize("name", sorted(CALLING_ACTIONS))
async def test_each_provider_calling_websocket_action_is_refused_with_zero_requests(
    name, setup, team, bob, fake_openai
):
    recipe = CALLING_ACTIONS[name]
    scene = await sync_to_async(_fresh)(setup, team, bob, bob, "allowed")
    fake_openai.state.requests.clear()
    reply = await through_socket(name, recipe, scene, bob)
    assert fake_openai.state.requests, f"{name}: the recipe never reached the provider ({reply})"
    for state in STATES:
        scene = await sync_to_async(_fresh)(setup, team, bob, bob, state)
        fake_openai.state.requests.clear()
        reply = await through_socket(name, recipe, scene, bob)
        assert fake_openai.state.requests == [], f"{name} sent a request with the requester {state}"
        assert reply.get("type") in ("refused", "invalid"), reply
    assert await Lease.objects.acount() == 0


async def through_evaluation(scene, user) -> list[Cell]:
    """The evaluation's websocket `run` frame, until every cell has ended."""
    ws = WebsocketCommunicator(
        application,
        f"/ws/evaluate/{scene.evaluation.pk}/",
        headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")],
    )
    ws.scope["user"] = user
    connected, _ = await ws.connect()
    assert connected
    await ws.send_json_to({"type": "run", "scope": "all", "concurrency": 2})
    for _ in range(400):
        statuses = [c.status async for c in Cell.objects.filter(evaluation=scene.evaluation)]
        if statuses and all(s in (Cell.DONE, Cell.ERROR, Cell.STOPPED) for s in statuses):
            break
        await asyncio.sleep(0.05)
    await ws.disconnect()
    await settle_all()
    return [c async for c in Cell.objects.filter(evaluation=scene.evaluation)]


async def test_live_evaluation_cells_are_refused_with_zero_requests(setup, team, bob, fake_openai):
    """The evaluation's websocket `run` frame (its consumer has no other provider-calling frame)."""
    for state in ["allowed", *STATES]:
        scene = await sync_to_async(_fresh)(setup, team, bob, bob, state)
        fake_openai.state.requests.clear()
        cells = await through_evaluation(scene, bob)
        if state == "allowed":
            assert fake_openai.state.requests, [c.error for c in cells]
        else:
            assert fake_openai.state.requests == [] and all("Not sent" in c.error for c in cells), cells[0].error
    assert await Lease.objects.acount() == 0


async def test_a_refusal_says_who_what_was_used_the_limit_the_reset_and_who_raises_it(setup, team, bob):
    await Membership.objects.filter(team=team, user=bob).aupdate(monthly_token_budget=100)
    await UsageRecord.objects.acreate(team=team, user=bob, username="bob", kind="chat", prompt_tokens=120, status="ok")
    with pytest.raises(gate.Refused) as refused:
        await gate.aopen(setup, bob, "chat")
    words = refused.value.message
    assert "Your monthly token budget on Research is used up (120 of 100 tokens this month by bob" in words
    assert "It resets on 1 " in words and "an owner or admin of Research can raise it" in words
    assert refused.value.as_dict()["title"] == "Not sent through the team connection"


async def test_a_spent_team_budget_refuses_every_member(setup, team, alice, bob, fake_openai):
    from tests.teams.conftest import client_for

    def set_budget():
        return client_for(alice).post(reverse("teams:set_team_budget", args=[team.pk]), {"monthly_token_budget": "100"})

    response = await sync_to_async(set_budget)()
    assert response.status_code == 302
    await UsageRecord.objects.acreate(team=team, user=alice, username="alice", kind="chat", prompt_tokens=100)
    with pytest.raises(gate.Refused) as refused:
        await gate.aopen(setup, bob, "chat")
    assert refused.value.reason == "team_budget" and "(100 of 100 tokens this month, all members" in str(refused.value)
    assert "the owner of Research can raise it" in refused.value.message
    assert await team.audit.filter(action="team_budget").aexists()


class Socket(fanout.LocalFollower):
    """A chat socket as the send action sees it: the sends' cache (send_cache.py) and an inbox for early deltas."""

    def __init__(self, user, conversation_id):
        self.sends = SendCache(user, conversation_id)

    async def chat_early(self, event):
        pass


async def test_a_socket_that_sent_through_the_gate_is_refused_once_the_gate_would_refuse(
    setup, team, bob, fake_openai, monkeypatch
):
    """The socket's second send skips the gate's pre-check (its first one passed), never the gate's own check."""
    scene = await sync_to_async(_fresh)(setup, team, bob, bob, "allowed")
    socket = Socket(bob, scene.conversation.pk)
    prechecks = []
    why_not = gate.why_not
    monkeypatch.setattr(gate, "why_not", lambda *args: prechecks.append(args) or why_not(*args))

    async def send() -> dict:
        replies = []

        async def reply(frame):
            replies.append(frame)

        fake_openai.state.requests.clear()
        await actions.run(bob, scene.conversation.pk, {"action": "send", "id": "c1", "content": "Hi."}, reply, socket)
        await settle_all()
        return next(r for r in replies if r.get("id") == "c1")

    assert (await send())["type"] == "sent" and fake_openai.state.requests
    for state in STATES:
        await sync_to_async(condition)(state, team, bob, setup)
        prechecks.clear()
        reply = await send()
        assert prechecks == [], "the pre-check ran: the cached answer was not tested"
        assert fake_openai.state.requests == [], f"the cached socket sent with the requester {state}"
        assert reply["type"] == "invalid" and reply["errors"], reply
        await sync_to_async(condition)("allowed", team, bob, setup)
        assert (await send())["type"] == "sent"
    assert await Lease.objects.acount() == 0


# ---------------------------------------------------------------- the ledger


EVALUATION_RUN = "evaluate: the websocket's run frame"
PATHS = [
    *(("route", name) for name in sorted(CALLING)),
    *(("route", name) for name in sorted(MANAGER_CALLING)),
    *(("action", name) for name in sorted(CALLING_ACTIONS)),
    ("socket", EVALUATION_RUN),
]


def test_the_ledger_paths_are_every_provider_calling_path():
    """The table below is the gate's table above, whole: a path added there is checked here too."""
    assert {name for _, name in PATHS} == set(CALLING) | set(MANAGER_CALLING) | set(CALLING_ACTIONS) | {EVALUATION_RUN}


def _filed() -> dict:
    totals = UsageRecord.objects.aggregate(
        prompt_tokens=Sum("prompt_tokens"),
        completion_tokens=Sum("completion_tokens"),
        audio_characters=Sum("audio_characters"),
    )
    return {key: value or 0 for key, value in totals.items()}


def _billed(billed: list[dict]) -> dict:
    keys = ("prompt_tokens", "completion_tokens", "audio_characters")
    return {key: sum(item.get(key, 0) for item in billed) for key in keys}


async def _run_path(kind: str, name: str, recipe, scene, user) -> None:
    if kind == "route":
        await through_http(recipe, scene, user)
    elif kind == "action":
        await through_socket(name, recipe, scene, user)
    else:
        await through_evaluation(scene, user)


@pytest.mark.parametrize("kind,name", PATHS, ids=[name for _, name in PATHS])
async def test_each_provider_calling_path_files_what_the_provider_billed(
    kind, name, setup, team, alice, bob, fake_openai
):
    """Whatever a path sends through a team key, the usage the provider reported for it (tokens, characters)
    reaches the ledger, filed under the purpose its pass was opened for: the gate keeps no list of purposes."""
    recipes = {"route": CALLING.get(name) or [MANAGER_CALLING.get(name)], "action": [CALLING_ACTIONS.get(name)]}
    user = alice if name in MANAGER_CALLING else bob
    for recipe in recipes.get(kind, [None]):
        scene = await sync_to_async(_fresh)(setup, team, user, bob, "allowed")
        await UsageRecord.objects.all().adelete()
        fake_openai.state.requests.clear()
        fake_openai.state.billed.clear()
        await _run_path(kind, name, recipe, scene, user)
        assert fake_openai.state.requests, f"{name}: the recipe never reached the provider"
        billed = _billed(fake_openai.state.billed)
        assert await sync_to_async(_filed)() == billed, f"{name}: the ledger differs from the provider's bill"
        if any(billed.values()):
            purposes = {row.kind async for row in UsageRecord.objects.filter(team=team)}
            assert purposes and "" not in purposes
    assert await Lease.objects.acount() == 0, "a lease was left behind"


# ---------------------------------------------------------------- the user's answers at once


CHAT_ROUTES = sorted(name for name in CALLING if name.startswith("chat:"))


def test_the_chat_paths_are_every_chat_route_and_action():
    """Every chat route that reaches a provider is a chat route of the table above (so a new one is checked)."""
    assert set(CHAT_ROUTES) == {name for name in route_names() if name.startswith("chat:")} - set(NOT_CALLING)
    assert set(CALLING_ACTIONS) <= set(actions.ACTIONS)


def _busy_elsewhere(bob, connection, count: int) -> None:
    """`count` answers of bob generating in another conversation."""
    from django.utils import timezone

    other = Conversation.objects.create(owner=bob, connection=connection, model_id=fake.CHAT_MODEL)
    for _ in range(count):
        Message.objects.create(conversation=other, role="assistant", status=Message.STREAMING, heartbeat=timezone.now())


@pytest.mark.parametrize(
    "kind,name", [("route", n) for n in CHAT_ROUTES] + [("action", n) for n in sorted(CALLING_ACTIONS)]
)
async def test_each_chat_path_keeps_the_users_limit_of_answers_at_once(
    kind, name, setup, team, bob, fake_openai, monkeypatch
):
    """At the limit of answers generating at once, every path that starts an answer (send, the start page's first
    message, retry, regenerate, edit, compare, tool results; by form and by socket) sends nothing and saves
    nothing: the limit is kept where every turn opens the gate (services/turns.py open_turns)."""
    from playground.chat.relay import limits

    monkeypatch.setattr(limits, "MAX_RUNNING_PER_USER", 2)
    scene = await sync_to_async(_fresh)(setup, team, bob, bob, "allowed")
    await sync_to_async(_busy_elsewhere)(bob, setup, 2)
    messages, conversations = await Message.objects.acount(), await Conversation.objects.acount()
    fake_openai.state.requests.clear()
    if kind == "route":
        for recipe in CALLING[name]:
            answer = []
            status = await through_http(recipe, scene, bob, answer)
            assert status in (200, 429) and "the limit is 2 at once" in answer[0], (status, answer[0][:300])
    else:
        reply = await through_socket(name, CALLING_ACTIONS[name], scene, bob)
        assert reply.get("type") in ("refused", "invalid"), reply
        assert "the limit is 2 at once" in json.dumps(reply), reply
    assert fake_openai.state.requests == [], f"{name} sent a request over the user's limit"
    assert (await Message.objects.acount(), await Conversation.objects.acount()) == (messages, conversations)
    assert await Lease.objects.acount() == 0
