"""What a chat tab asks for over its websocket: every frame of the chat socket is dispatched here (`dispatch`).

Actions, `{"action": <name>, "id": <the tab's id for it>, ...fields}`: each is a thin adapter over the command of the
same name (commands.py, which the htmx views call too), registered under its name (`@action("send")`); the consumer
only decodes the frame and hands it here with the socket's user and conversation. An action answers the tab with
frames carrying the frame's `id`: `sent` (it started or changed: the articles to show, or `thread`, the re-rendered
selected path; `message_ids`), `invalid` (nothing was done: `errors`, each naming the field and the limit), `failed`
(nothing was done: the database or the live channel is down) or `refused` (not this user's, or not possible).

Signals, `{"type": <name>, ...}` with no id and no reply but the ping's pong, registered with `@signal`: the page's
heartbeat (`ping`), the request for a running answer's snapshot and deltas (`subscribe`) and `stop`.

A send over the socket skips what the form POST pays for before the upstream call (the middleware stack, the
multipart parsing, the session and user queries).
"""

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from channels.db import database_sync_to_async
from django.db import DatabaseError
from django.http import QueryDict
from django.template.loader import render_to_string

from playground.chat import branches, commands, outcomes
from playground.chat.outcomes import FAILED, INVALID, SENT, Outcome
from playground.chat.relay.fanout import Tab
from playground.connections import gate

ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
PROTOCOL_KEYS = ("type", "action", "id")
MAX_FIELDS = 200

Reply = Callable[[dict], Awaitable[None]]


@dataclass
class Context:
    user: object
    conversation_id: int
    reply: Reply  # sends a frame to the tab (the action's id is added)
    socket: object = None  # the consumer (a fanout.LocalFollower) the frame came on, when there is one
    id: str = ""  # the tab's id for the action

    def tab(self) -> Tab | None:
        """The asking socket as the target of its turn's first deltas (relay/fanout.py)."""
        return Tab(self.socket, self.id) if self.socket is not None else None


Handler = Callable[[Context, dict], Awaitable[None]]
ACTIONS: dict[str, Handler] = {}  # frames that carry an id and get one reply, by `action` (else `type`)
SIGNALS: dict[str, Handler] = {}  # frames with no id, by `type`


def action(name: str):
    def register(function):
        ACTIONS[name] = function
        return function

    return register


def signal(name: str):
    def register(function):
        SIGNALS[name] = function
        return function

    return register


def kinds() -> list[str]:
    """The kinds of frame the chat socket reads (lib/frames.py refuses the others)."""
    return [*ACTIONS, *SIGNALS]


async def dispatch(user, conversation_id: int, frame: dict, send: Reply, socket=None) -> None:
    """Hand one frame of the chat socket to its action, else to its signal."""
    if name_of(frame):
        await run(user, conversation_id, frame, send, socket)
        return
    kind = frame.get("type")
    handler = SIGNALS.get(kind) if isinstance(kind, str) else None
    if handler is not None:
        await handler(Context(user, conversation_id, send, socket), frame)


def name_of(frame: dict) -> str | None:
    """The action a frame asks for: its `action`, or its `type` when that names one (`{"type": "send"}`)."""
    name = frame.get("action") if "action" in frame else frame.get("type")
    return name if isinstance(name, str) and name in ACTIONS else None


async def run(user, conversation_id: int, frame: dict, send: Reply, socket=None) -> None:
    name = name_of(frame)
    client_id = frame.get("id")
    if name is None:
        return
    if not isinstance(client_id, str) or not ID.match(client_id):
        await send({"type": "invalid", "id": None, "errors": ["id: a string of 1 to 64 letters, digits, - or _."]})
        return

    async def reply(message: dict) -> None:
        await send({**message, "id": client_id})

    try:
        await ACTIONS[name](Context(user, conversation_id, reply, socket, client_id), frame)
    except gate.Refused as refusal:  # every action that reaches a provider opens the gate: nothing was sent
        await reply({"type": "refused", "error": refusal.message})
    except DatabaseError:
        await reply({"type": "failed", "error": outcomes.UNAVAILABLE["database_unavailable"]})


def form_fields(frame: dict) -> QueryDict | None:
    """The frame's form fields as the POST would carry them (strings, or lists of strings); None if malformed."""
    fields = QueryDict(mutable=True)
    for key, value in frame.items():
        if key in PROTOCOL_KEYS:
            continue
        values = value if isinstance(value, list) else [value]
        if len(fields) >= MAX_FIELDS or not all(isinstance(v, str) for v in values):
            return None
        fields.setlist(key, values)
    fields._mutable = False
    return fields


def refusal(outcome: Outcome) -> dict:
    """The frame of an outcome that did nothing."""
    if outcome.kind == INVALID:
        return {"type": "invalid", "errors": outcome.errors}
    if outcome.kind == FAILED:
        # `problem` "draining": this process is restarting; the page sends it again another way (composer.js).
        return {"type": "failed", "error": outcome.errors[0], "problem": outcome.problem}
    return {"type": "refused", "error": outcome.errors[0]}


def _prepare_send(ctx: Context, fields: QueryDict, launch) -> Outcome:
    return commands.prepare_send(ctx.user, ctx.conversation_id, fields, (), launch, render=False)


@action("send")
async def send(ctx: Context, frame: dict) -> None:
    """A new turn from the composer: the upstream call starts, then the rows are written, then the tab hears
    `sent` (the question and the answer's placeholder as data, `placeholder`, which the page builds its articles
    from: nothing is rendered on the way to the first delta; `html` when the page could not build them). Deltas
    that arrive before the rows are written come to this tab at once, named by the frame's id (`action`) until
    the message id is known; the page holds them until `sent`. `early`: the upstream call started before any row
    was written (always, since every send starts it there)."""
    fields = form_fields(frame)
    if fields is None:
        await ctx.reply({"type": "invalid", "errors": ["Fields: each value must be text or a list of texts."]})
        return

    async def sent(outcome: Outcome) -> None:
        turn = outcome.turns[0]
        frame = {"type": "sent", "message_id": turn.assistant.pk, "conversation": ctx.conversation_id}
        frame["early"] = turn.generation is not None
        if turn.placeholder is not None:
            frame["placeholder"] = turn.placeholder  # the page builds the articles (articles.js)
        else:
            frame["html"] = outcome.html
        await ctx.reply(frame)

    cache = getattr(ctx.socket, "sends", None)  # what the socket's earlier sends read (send_cache.py)
    outcome = await commands.send(
        ctx.user, ctx.conversation_id, fields, on_sent=sent, tab=ctx.tab(), cache=cache, render=False
    )
    if outcome.kind != SENT:
        await ctx.reply(refusal(outcome))


@action("retry")
async def retry(ctx: Context, frame: dict) -> None:
    """Regenerate an answer; the old one stays until the new one is complete (the `done` names it `replaced`)."""

    async def sent(outcome: Outcome) -> None:
        turn = outcome.turns[0]
        await ctx.reply(
            {"type": "sent", "message_id": turn.assistant.pk, "replaces": turn.replaces.pk, "html": outcome.html}
        )

    outcome = await commands.retry(ctx.user, ctx.conversation_id, frame.get("message_id"), on_sent=sent, tab=ctx.tab())
    if outcome.kind != SENT:
        await ctx.reply(refusal(outcome))


def _thread_html(conversation) -> str:
    context = {"conversation": conversation, "thread": branches.thread(conversation), "has_connection": True}
    return render_to_string("chat/index.html#thread", context)


def _operation(name: str):
    async def operate(ctx: Context, frame: dict) -> None:
        args = commands.arguments(name, frame.get)
        tab = frame.get("tab") if isinstance(frame.get("tab"), str) else ""
        outcome = await commands.operate(name, ctx.user, ctx.conversation_id, args, tab=tab)
        if outcome.kind != SENT:
            await ctx.reply(refusal(outcome))
            return
        html = await database_sync_to_async(_thread_html)(outcome.conversation)
        ids = outcome.message_ids
        await ctx.reply({"type": "sent", "conversation": ctx.conversation_id, "thread": html, "message_ids": ids})

    operate.__name__ = operate.__qualname__ = name
    return operate


for _name in commands.OPERATIONS:
    action(_name)(_operation(_name))


@action("tool_results")
async def tool_results(ctx: Context, frame: dict) -> None:
    """Answer the tool calls of answer `message_id` (`result:<call id>` fields, all at once) and continue the turn;
    `sent` carries the answer, its `tool` messages and the new answer's placeholder, as the htmx view returns."""
    message_id = frame.get("message_id")
    outcome = await commands.tool_results(ctx.user, ctx.conversation_id, message_id, commands.results_of(frame))
    if outcome.kind != SENT:
        await ctx.reply(refusal(outcome))
        return
    ids = outcome.message_ids
    await ctx.reply({"type": "sent", "conversation": ctx.conversation_id, "html": outcome.html, "message_ids": ids})


def _message_and_after(frame: dict) -> tuple[int, int] | None:
    """The answer a signal names and the seq its tab has of it; None when either is not a number."""
    try:
        return int(frame.get("message_id")), int(frame.get("after") or 0)
    except (TypeError, ValueError):
        return None


@signal("ping")
async def ping(ctx: Context, frame: dict) -> None:
    """The page's heartbeat (socket.js): a silent socket is a dead one."""
    await ctx.reply({"type": "pong"})


@signal("subscribe")
async def subscribe(ctx: Context, frame: dict) -> None:
    """Follow a running answer from `after`: a snapshot, then its deltas (replay.py, the socket's mixin)."""
    named = _message_and_after(frame)
    if named is not None:
        await ctx.socket.subscribe(*named)


@signal("stop")
async def stop(ctx: Context, frame: dict) -> None:
    named = _message_and_after(frame)
    if named is not None:
        await commands.stop(ctx.user, ctx.conversation_id, named[0])
