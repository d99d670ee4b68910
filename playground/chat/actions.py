"""What a chat tab asks for over its websocket: `{"action": <name>, "id": <the tab's id for it>, ...fields}`.

Each action is a plain coroutine registered under its name (`@action("send")`); the consumer only decodes the
frame and hands it here with the socket's user and conversation. An action answers the tab with frames carrying
the frame's `id`: `sent` (it started: the articles to show; a send's `early` says whether its upstream call
started before its checks), `invalid` (nothing was done: `errors`, each naming the field and the limit), `failed`
(nothing was done: the database or the live channel is down) or `refused` (not this user's, or not possible). The
form fields are validated exactly as the form POST does (views.py).

A send over the socket skips what the form POST pays for before the upstream call (the middleware stack, the
thread hop of the sync middleware, the multipart parsing, the session and user queries): the upstream request
starts as soon as the body is built, in the one thread hop that then writes the rows; or, after the tab's warm
frame, before that thread hop (warm.py).
"""

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from channels.db import database_sync_to_async
from django.db import DatabaseError
from django.http import QueryDict
from django.utils.datastructures import MultiValueDict

from playground.chat import services, views
from playground.chat.models import Conversation, Message
from playground.connections import gate

if TYPE_CHECKING:
    from playground.chat.warm import WarmSend

ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
PROTOCOL_KEYS = ("type", "action", "id")
MAX_FIELDS = 200

Reply = Callable[[dict], Awaitable[None]]


@dataclass
class Context:
    user: object
    conversation_id: int
    reply: Reply  # sends a frame to the tab (the action's id is added)
    warm: "WarmSend | None" = None  # the socket's, for a send started early (warm.py)


ACTIONS: dict[str, Callable[[Context, dict], Awaitable[None]]] = {}


def action(name: str):
    def register(function):
        ACTIONS[name] = function
        return function

    return register


def name_of(frame: dict) -> str | None:
    """The action a frame asks for: its `action`, or its `type` when that names one (`{"type": "send"}`)."""
    name = frame.get("action") if "action" in frame else frame.get("type")
    return name if isinstance(name, str) and name in ACTIONS else None


async def run(user, conversation_id: int, frame: dict, send: Reply, warm: "WarmSend | None" = None) -> None:
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
        await ACTIONS[name](Context(user, conversation_id, reply, warm), frame)
    except gate.Refused as refusal:  # every action that reaches a provider opens the gate: nothing was sent
        await reply({"type": "refused", "error": refusal.message})
    except DatabaseError:
        await reply({"type": "failed", "error": views.UNAVAILABLE["database_unavailable"]})


class FormInput:
    """What the form code of views.py reads of a request, from a frame's fields (no files over the socket)."""

    htmx = False

    def __init__(self, user, fields: QueryDict):
        self.user = user
        self.POST = fields
        self.FILES = MultiValueDict()


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


def errors_of(composer, problems) -> list[str]:
    errors = [e for errs in composer.errors.values() for e in errs]
    if problems is not None:
        errors += problems.errors
        if problems.form is not None:  # the parameter forms' messages name their field ("top_p: ...")
            errors += [e for errs in problems.form.errors.values() for e in errs]
    return errors


def _prepare_send(ctx: Context, fields: QueryDict, launch):
    conversation = (
        Conversation.objects.for_user(ctx.user).select_related("connection").filter(pk=ctx.conversation_id).first()
    )
    if conversation is None:
        return {"type": "refused", "error": "No such conversation."}
    rows = services.history_rows(conversation)  # one query for the waiting tool calls and the request
    composer, problems, _ = views.validate_send(FormInput(ctx.user, fields), conversation, rows)
    if not composer.is_valid() or problems is not None:
        return {"type": "invalid", "errors": errors_of(composer, problems)}
    turn = services.prepare_turn(conversation, composer.cleaned_data["content"], launch=launch, rows=rows)
    turn.assistant_html = services.render_message(turn.assistant)
    return turn, services.render_message(turn.user_message) + turn.assistant_html


@action("send")
async def send(ctx: Context, frame: dict) -> None:
    """A new turn from the composer: the upstream call starts, then the rows are written, then the tab hears
    `sent` (the question and the answer's placeholder) before any delta of it."""
    fields = form_fields(frame)
    if fields is None:
        await ctx.reply({"type": "invalid", "errors": ["Fields: each value must be text or a list of texts."]})
        return
    if problem := await views._live_problem():
        await ctx.reply({"type": "failed", "error": views.UNAVAILABLE[problem]})
        return
    launch = services.launcher(asyncio.get_running_loop())
    early = await ctx.warm.start(fields, launch) if ctx.warm is not None else None
    try:
        outcome = await database_sync_to_async(_prepare_send)(ctx, fields, early.adopting(launch) if early else launch)
    finally:
        if early is not None:
            early.drop()  # unless the checks adopted it
    if isinstance(outcome, dict):
        await ctx.reply(outcome)
        return
    turn, html = outcome
    await ctx.reply(
        {
            "type": "sent",
            "message_id": turn.assistant.pk,
            "conversation": ctx.conversation_id,
            "html": html,
            "early": early is not None and early.adopted,
        }
    )
    await services.start_turn(turn)


def _prepare_retry(ctx: Context, message_id: object, launch):
    try:
        message_id = int(message_id)
    except (TypeError, ValueError):
        return {"type": "invalid", "errors": ["message_id: the id of the answer to retry."]}
    message = (
        Message.objects.filter(
            pk=message_id, conversation_id=ctx.conversation_id, conversation__owner=ctx.user, role="assistant"
        )
        .select_related("conversation__connection")
        .first()
    )
    if message is None:
        return {"type": "refused", "error": "No such answer."}
    if message.status not in (Message.ERROR, Message.STOPPED, Message.INTERRUPTED):
        return {"type": "refused", "error": "Only a failed, stopped or interrupted answer can be retried."}
    turn = services.prepare_turn(message.conversation, None, replace=message, launch=launch)
    turn.assistant_html = services.render_message(turn.assistant)
    return turn, services.render_message(message) + turn.assistant_html


@action("retry")
async def retry(ctx: Context, frame: dict) -> None:
    """Regenerate an answer; the old one stays until the new one is complete (the `done` names it `replaced`)."""
    if problem := await views._live_problem():
        await ctx.reply({"type": "failed", "error": views.RETRY_UNAVAILABLE[problem]})
        return
    launch = services.launcher(asyncio.get_running_loop())
    outcome = await database_sync_to_async(_prepare_retry)(ctx, frame.get("message_id"), launch)
    if isinstance(outcome, dict):
        await ctx.reply(outcome)
        return
    turn, html = outcome
    await ctx.reply({"type": "sent", "message_id": turn.assistant.pk, "replaces": turn.replaces.pk, "html": html})
    await services.start_turn(turn)


# The branch, compare and tool-results actions register themselves (kept apart to keep this module small).
from playground.chat import socket_branches  # noqa: E402, F401
