"""Starting a turn: save the user message and the answer's placeholder, start its generation, stop it."""

import asyncio
import logging
from dataclasses import dataclass, field

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import prefetch_related_objects
from django.utils import timezone

from playground.chat import branches
from playground.chat.forms import Upload
from playground.chat.models import Attachment, Conversation, Message, attachment_name
from playground.chat.relay import fanout
from playground.chat.relay.control import generation_group
from playground.chat.relay.display import render_message
from playground.chat.relay.generation import Generation, running
from playground.chat.relay.limits import Limits, check_capacity, limits_of
from playground.chat.relay.publishing import conversation_group
from playground.chat.services.request import ChatRequest, build_request, connection_for, selected_model
from playground.connections import gate
from playground.lib.prepared import Prepared
from playground.upstream.client import Endpoint

log = logging.getLogger(__name__)

END = object()  # prepare_turn's default place: the end of the selected path
REQUEST_WAIT = 0.02  # longest the rows wait for the upstream request to be written (a slow connect does not)


@dataclass
class Turn:
    conversation: Conversation
    user_message: Message | None
    assistant: Message
    endpoint: Endpoint
    request: ChatRequest
    headers: dict = field(default_factory=dict)
    generation: "Generation | None" = None
    assistant_html: str = ""
    replaces: Message | None = None
    limits: "Limits | None" = None
    placeholder: dict | None = None  # the turn as data, for pages that build its articles (relay/display.py)


def launcher(loop: asyncio.AbstractEventLoop, headers: dict | None = None, tab: fanout.Tab | None = None):
    """For prepare_turn (which runs in a thread): start a generation on `loop` at once, bound to its row later
    (`tab`: the socket that asked, which gets its deltas until the turn is announced)."""

    def launch(endpoint: Endpoint, body: dict, limits: "Limits | None" = None) -> Generation:
        generation = Generation(endpoint, body, headers=headers, loop=loop, limits=limits, tab=tab)
        loop.call_soon_threadsafe(generation.begin)
        return generation

    return launch


# Read at every send ("conversation" too: a deferred one would cost a query per message where it is read).
HISTORY = Prepared(
    lambda conversation: Message.objects.filter(conversation_id=conversation).only(
        "conversation", "role", "content", "status", "tool_calls", "tool_call_id", "parent", "selected"
    ),
    conversation=int,
)


def history_rows(conversation: Conversation) -> list[Message]:
    """The conversation's messages as a request (and the waiting tool calls) need them, in one query, each
    holding `conversation` itself. prepare_turn fetches the attachments of the user messages of the path it sends,
    in one more query."""
    rows = HISTORY.objects(conversation=conversation.pk)
    for row in rows:
        row.conversation = conversation
    return rows


def prepare_turn(
    conversation: Conversation,
    content: str | None,
    *,
    attachments: list[Upload] = (),
    replace: Message | None = None,
    launch=None,
    tool_results: list[tuple[str, str]] = (),
    parent=END,
    kept: list[Attachment] = (),
    rows: list[Message] | None = None,
    values: dict | None = None,
    written=None,
) -> Turn:
    """Save the user message (when given) and the answer's placeholder after `parent` (default: the end of the
    selected path), with the request built and let through by open_turns first (sync code). `replace`: an answer to
    regenerate (deleted once the new one is complete); `kept`: the files an edited message keeps; `tool_results`:
    (call id, text) pairs saved as tool messages before the placeholder; `rows`, `values`: the caller's fresh reads
    of history_rows and the panel; `written(conversation)` runs inside the rows' transaction. With `launch`
    (launcher) the upstream call starts before the rows are written, overlapping the provider's first token."""
    connection = connection_for(conversation)
    model = selected_model(conversation)
    if rows is None:
        rows = history_rows(conversation)
    parent = replace.parent_id if replace is not None else _end_of_path(rows) if parent is END else parent
    results = [Message(conversation=conversation, role="tool", tool_call_id=i, content=t) for i, t in tool_results]
    request = build_request(
        conversation,
        model,
        [*_history(rows, parent), *results],
        next_user=content,
        next_attachments=[*attachments, *kept],
        connection=connection,
        values=values,
    )
    (launched,) = open_turns(conversation, connection, [request], launch)
    if isinstance(launched.generation, Generation):
        launched.generation.wait_written(REQUEST_WAIT)  # the call first, then the rows
    if launched.generation is not None and replace is not None:
        launched.generation.replaces = replace.pk
    children = branches.children_of(rows)
    with undone_on_failure([launched]) as stored:
        if content is not None:
            stored += store_uploads(conversation, attachments)
        with transaction.atomic():
            user_message, assistant = _write_turn(
                conversation, content, parent, children, attachments, stored, kept, results, model, request
            )
            if written is not None:
                written(conversation)
    if launched.generation is not None:
        launched.generation.bind_threadsafe(assistant)
    generation, limits = launched.generation, launched.limits
    endpoint = launched.endpoint
    return Turn(
        conversation, user_message, assistant, endpoint, request, generation=generation, replaces=replace, limits=limits
    )


def _end_of_path(rows: list[Message]) -> int | None:
    path = branches.path_of(rows, annotated=False)
    return path[-1].pk if path else None


def _history(rows: list[Message], parent) -> list[Message]:
    """The path up to `parent`, the answers still generating left out; only its questions' attachments are read."""
    history = [m for m in branches.ancestors(rows, parent) if m.status != Message.STREAMING]
    prefetch_related_objects([m for m in history if m.role == "user"], "attachments")
    return history


@dataclass
class Launched:
    """One request let through: its generation (when launched), its endpoint (None while it waits for a slot),
    its limits (with the gate's pass)."""

    generation: "Generation | None"
    endpoint: Endpoint | None
    limits: Limits

    def abort(self) -> None:
        if self.generation is not None:
            self.generation.abort_threadsafe()  # which releases the ticket
        elif self.limits.ticket is not None:
            self.limits.ticket.release()


def open_turns(conversation: Conversation, connection, requests: list[ChatRequest], launch) -> list[Launched]:
    """The one door of every turn (send, retry, edit, regenerate, tool results, each compare column) to the
    provider: the user's capacity for answers generating at once, then the gate for each request (membership,
    revocation, budgets, a slot) and its upstream call started (with `launch`). A connection whose slots are all
    taken makes the generation wait for one, saying so; it is checked again by the gate then."""
    check_capacity(conversation.owner_id, len(requests))
    launched: list[Launched] = []
    try:
        for request in requests:
            launched.append(_launch(conversation, connection, request, launch))
    except BaseException:
        for one in launched:
            one.abort()
        raise
    return launched


class undone_on_failure:
    """`with undone_on_failure(launched) as stored:` a failure while the rows are written aborts the
    generations (their passes go back) and deletes the files written (`stored`, names) for rows not saved."""

    def __init__(self, launched: list[Launched]):
        self.launched, self.stored = launched, []

    def __enter__(self) -> list[str]:
        return self.stored

    def __exit__(self, kind, error, trace) -> None:
        if kind is None:
            return
        for one in self.launched:
            one.abort()
        storage = Attachment._meta.get_field("file").storage
        for name in self.stored:
            storage.delete(name)


def _launch(conversation: Conversation, connection, request: ChatRequest, launch) -> Launched:
    try:
        ticket = gate.open(connection, conversation.owner_id, "chat", body=request.body)
    except gate.Refused as refusal:
        if refusal.reason != "busy":
            raise
        ticket = None  # every slot is taken: the generation waits for one, saying so (and is checked again then)
    endpoint, limits = (ticket.endpoint if ticket else None), limits_of(connection, ticket)
    if ticket is None:
        limits.queued = (connection, conversation.owner_id)
    try:
        generation = launch(endpoint, request.body, limits) if launch is not None else None
    except BaseException:
        if ticket is not None:
            ticket.release()
        raise
    return Launched(generation, endpoint, limits)


def _write_turn(conversation, content, parent, children, attachments, stored, kept, results, model, request):
    """The turn's rows (inside the caller's transaction): the user message with its files, the tool results, the
    answer's placeholder; returns (user message or None, placeholder). A conversation not saved yet (the start
    page's first message) is saved with them."""
    if conversation.pk is None:
        conversation.save()
    user_message = None
    if content is not None:
        user_message = branches.add(conversation, parent, role="user", content=content, known=children.get(parent, []))
        files = save_attachments(user_message, attachments, stored)
        # An edited message keeps the original's files (the rows share them; see delete_unused_file).
        files += Attachment.objects.bulk_create(a.copy_for(user_message) for a in kept)
        known_attachments(user_message, files)
        conversation.title_from(content)
        parent = user_message.pk
    for result in results:  # each follows the one before, after the answer that called the tools
        parent = branches.add(
            conversation,
            parent,
            role="tool",
            tool_call_id=result.tool_call_id,
            content=result.content,
            known=children.get(parent, []),
        ).pk
    if model is not None and not conversation.model_id:
        conversation.model_id = model.model_id
    conversation.save()
    params = {k: v for k, v in request.body.items() if k not in ("model", "messages")}
    assistant = branches.add(
        conversation,
        parent,
        role="assistant",
        status=Message.STREAMING,
        model_id=request.body["model"],
        params=params,
        heartbeat=timezone.now(),
        known=children.get(parent, []),
    )
    known_attachments(assistant, [])
    return user_message, assistant


def known_attachments(message: Message, attachments: list[Attachment]) -> None:
    """Give a message just written the attachments just written with it, as a prefetch would (rendering it then
    reads no rows)."""
    if any(a.pk is None for a in attachments):  # a database without RETURNING: let the template read them
        return
    cached = message.attachments.all()
    cached._result_cache, cached._prefetch_done = list(attachments), True
    message._prefetched_objects_cache = {"attachments": cached}


def store_uploads(conversation: Conversation, uploads: list[Upload]) -> list[str]:
    """Write the files (before the transaction that creates their rows, which must stay short)."""
    storage = Attachment._meta.get_field("file").storage
    return [storage.save(attachment_name(conversation.owner_id, u.name), ContentFile(u.data)) for u in uploads]


def save_attachments(message: Message, uploads: list[Upload], names: list[str]) -> list[Attachment]:
    return Attachment.objects.bulk_create(
        Attachment(
            message=message,
            file=name,
            kind=u.kind,
            content_type=u.content_type,
            name=u.name,
            size=u.size,
            options=u.options,
        )
        for u, name in zip(uploads, names, strict=True)
    )


async def start_turn(turn: Turn) -> "Generation":
    """Start the generation (unless prepare_turn launched it) and announce its placeholder to the other tabs.

    The announcement goes after the upstream call started (rendering it costs no time to first token); the
    generation holds its deltas for every tab but the asking one (its `tab`) until it went, so the other tabs
    hear `start` before any delta, and then what the asking tab got alone in one delta.
    """
    if turn.generation is None:
        turn.generation = start(
            turn.assistant, turn.endpoint, turn.request.body, headers=turn.headers, limits=turn.limits
        )
        turn.generation.replaces = turn.replaces.pk if turn.replaces else None
    turn.generation.whole_final = bool(turn.assistant.compare)
    event = {"type": "chat.start", "message_id": turn.assistant.pk}
    if turn.placeholder is not None:
        event["placeholder"] = turn.placeholder  # every tab builds it (articles.js): nothing rendered here
    else:
        event["html"] = turn.assistant_html or await sync_to_async(render_message)(turn.assistant)
    try:
        await fanout.publish(get_channel_layer(), conversation_group(turn.conversation.pk), event)
    except Exception as exc:
        # The generation runs and saves its answer regardless; other tabs see it when they reload.
        turn.generation.lost_live(exc)
    finally:
        turn.generation.announce()
    return turn.generation


class LiveUnavailable(Exception):
    """The channel layer cannot be reached: a turn started now could not be watched live nor stopped."""


async def check_live() -> None:
    """Raise LiveUnavailable unless the channel layer answers (a Redis PING; the in-memory layer always does).

    Called before a send writes anything, so that a dead Redis leaves nothing half-made.
    """
    layer = get_channel_layer()
    connection = getattr(layer, "connection", None)
    if connection is None:
        return
    try:
        await asyncio.wait_for(connection(0).ping(), timeout=5)
    except Exception as exc:
        raise LiveUnavailable(f"{type(exc).__name__}: {exc}") from exc


async def send(
    conversation: Conversation, content: str, *, attachments: list[Upload] = (), headers: dict | None = None
) -> Turn:
    launch = launcher(asyncio.get_running_loop(), headers)
    turn = await sync_to_async(prepare_turn)(conversation, content, attachments=attachments, launch=launch)
    turn.headers = headers or {}
    await start_turn(turn)
    return turn


def start(
    message: Message, endpoint: Endpoint, body: dict, *, headers: dict | None = None, limits: "Limits | None" = None
) -> "Generation":
    generation = Generation(endpoint, body, headers=headers, limits=limits)
    generation.begin()
    generation.bind(message.pk, message.conversation_id)
    return generation


async def request_stop(message_id: int) -> None:
    """Stop a generation wherever it runs (this process or another one on the same channel layer)."""
    local = running(message_id)
    if local is not None:
        local.stop()
        return
    try:
        await get_channel_layer().group_send(generation_group(message_id), {"type": "generation.stop"})
    except Exception:
        log.warning("Could not ask for a stop of message %s: the channel layer is unavailable", message_id)
