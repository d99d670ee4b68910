"""One command per chat operation: send, retry, stop, the branch and compare operations, and tool results.

Each command takes plain values (the user, ids, the posted fields or a frame's, the files), validates them once and
returns one `Outcome`. The htmx views (views.py, branch_views.py, tool_views.py) and the websocket actions
(actions.py) are adapters of a few lines around them, so the same rows and upstream bodies follow from either.

A send or a retry starts its upstream request in the thread that checks it, as soon as the gate let it through
and its body is built: before any row is written and before any template is rendered (services.launcher).
"""

import asyncio
from collections.abc import Callable

from asgiref.sync import sync_to_async
from django.db import DatabaseError
from django.http import Http404

from playground import inputs
from playground.chat import choices, services
from playground.chat.composing import uploads_of, waiting_tools
from playground.chat.forms import ComposerForm
from playground.chat.models import Conversation, Message
from playground.chat.outcomes import (
    INVALID,
    REFUSED,
    SENT,
    UNAVAILABLE,
    OnSent,
    Outcome,
    failed,
    refused,
)
from playground.chat.panel import PanelProblems, apply_panel
from playground.chat.relay.display import placeholder_of, render_message
from playground.chat.relay.fanout import Tab
from playground.chat.send_cache import SendCache
from playground.chat.services import branches as operations
from playground.chat.services import compare as comparisons
from playground.connections import gate
from playground.lib import drain

NO_CONNECTION = "No connection to send to: add a connection (a provider's base URL and API key) first."
NOT_WAITING = "These tool calls are no longer waiting for results (answered in another tab, or the thread moved on)."


async def live_problem() -> str | None:
    if drain.draining():  # after a SIGTERM: no new generation here (lib/drain.py); another process takes it
        return "draining"
    try:
        await services.check_live()
    except services.LiveUnavailable:
        return "live_unavailable"
    return None


async def _start(outcome: Outcome, on_sent: OnSent) -> Outcome:
    """The generations of a sent outcome go live; `on_sent` first (the tab hears `sent` before the start; the
    deltas that came to it before, named by its ask's id, wait in the page for that reply)."""
    if outcome.sent:
        if on_sent is not None:
            await on_sent(outcome)
        for turn in outcome.turns:
            await services.start_turn(turn)
    return outcome


def message_id_of(value) -> int | None:
    """An id named by a field, a frame or the address: a positive integer the database can hold, else None."""
    try:
        return inputs.object_id(value)
    except Http404:
        return None


# ---------------------------------------------------------------- send


def errors_of(composer: ComposerForm, panel: PanelProblems | None) -> list[str]:
    errors = [e for errs in composer.errors.values() for e in errs]
    if panel is not None:
        errors += panel.errors
        if panel.form is not None:  # the parameter forms' messages name their field ("top_p: ...")
            errors += [e for errs in panel.form.errors.values() for e in errs]
    return errors


def prepare_send(
    user,
    conversation_id: int | None,
    fields,
    files=(),
    launch=None,
    cache: SendCache | None = None,
    *,
    render: bool = True,
) -> Outcome:
    """Everything synchronous of a send, in one thread hop. `conversation_id` None: the start page's first
    message, which saves the conversation with it (a failure leaves neither behind). `cache`: what the earlier
    sends of the same socket read (send_cache.py). `render` False (a page that builds the articles itself):
    the turn comes as data (`Turn.placeholder`) and nothing is rendered, unless the page could not build it."""
    rows = []
    try:
        outcome = _prepare_send(user, conversation_id, fields, files, launch, cache, rows, render)
    except BaseException:
        if cache is not None:
            cache.forget()
        raise
    if cache is not None:
        cache.sent(outcome, rows)
    return outcome


def _prepare_send(user, conversation_id, fields, files, launch, cache, rows: list, render: bool) -> Outcome:
    if conversation_id is None:
        conversation = Conversation(owner=user)
    else:
        if cache is not None:
            conversation = cache.conversation()
        else:
            conversation = Conversation.objects.for_user(user).select_related("connection").filter(pk=conversation_id)
            conversation = conversation.first()
        if conversation is None:
            return refused("No such conversation.", 404)
        rows += services.history_rows(conversation)  # one query for the waiting tool calls and the request
        if cache is not None:
            cache.known_attachments(rows)
    composer = ComposerForm(fields)
    panel, values = apply_panel(user, fields, conversation)
    if panel is not None and not panel.blocking:
        panel = None  # invalid tools JSON in the editor: the saved tools stay and the message goes
    uploads = uploads_of(files, fields.get("attachment_options", ""), conversation, composer) if panel is None else []
    if problem := services.lost_connection(conversation):
        composer.add_error(None, problem)
    elif (connection := services.connection_for(conversation)) is None:
        composer.add_error(None, NO_CONNECTION)
    elif not (cache and cache.admits(connection)) and (problem := gate.why_not(connection, user)):
        composer.add_error(None, problem)
    if rows and (waiting := waiting_tools(conversation, rows)):
        composer.add_error(None, waiting)
    outcome = Outcome(INVALID, conversation=conversation, composer=composer, panel=panel)
    if not composer.is_valid() or panel is not None:
        outcome.errors = errors_of(composer, panel)
        return outcome
    content = composer.cleaned_data["content"]
    try:
        # A new conversation is saved in the turn's own transaction: a failure leaves neither behind.
        turn = services.prepare_turn(
            conversation,
            content,
            attachments=uploads,
            launch=launch,
            rows=rows,
            values=values,
            written=cache.written if cache is not None else None,
        )
    except gate.Refused as refusal:  # the gate's own check, under its lock (budgets, slots): nothing was saved
        if conversation_id is None:
            conversation.pk = None
        composer.add_error(None, refusal.message)
        outcome.errors = errors_of(composer, panel)
        return outcome
    if not render:
        turn.placeholder = placeholder_of(turn.user_message, turn.assistant, rows)
        if turn.placeholder is not None:
            return Outcome(SENT, conversation=conversation, turns=[turn])
    turn.assistant_html = render_message(turn.assistant)
    html = render_message(turn.user_message) + turn.assistant_html
    return Outcome(SENT, conversation=conversation, turns=[turn], html=html)


async def send(
    user,
    conversation_id: int | None,
    fields,
    files=(),
    *,
    on_sent: OnSent = None,
    tab: Tab | None = None,
    cache: SendCache | None = None,
    render: bool = True,
) -> Outcome:
    """A new turn from the composer (`fields`: the message and the panel's fields; `files`: its attachments).
    `tab`: the socket that asked, which gets the answer's first deltas before its rows are written; `cache`: what
    its earlier sends read; `render` False: the page builds the articles from the turn's data (prepare_send)."""
    if problem := await live_problem():
        return failed(problem, UNAVAILABLE)
    launch = services.launcher(asyncio.get_running_loop(), tab=tab)
    try:
        outcome = await sync_to_async(prepare_send)(user, conversation_id, fields, files, launch, cache, render=render)
    except DatabaseError:
        return failed("database_unavailable", UNAVAILABLE)
    return await _start(outcome, on_sent)


# ---------------------------------------------------------------- retry and stop


def _message(user, conversation_id: int, message_id) -> Message | None:
    conversation_id, message_id = message_id_of(conversation_id), message_id_of(message_id)
    if conversation_id is None or message_id is None:
        return None
    rows = Message.objects.filter(pk=message_id, conversation_id=conversation_id, conversation__owner=user)
    return rows.select_related("conversation__connection").first()


def prepare_retry(user, conversation_id: int, message_id, launch=None) -> Outcome:
    message = _message(user, conversation_id, message_id)
    if message is None or message.role != "assistant":
        return refused("No such answer.", 404)
    if message.status not in (Message.ERROR, Message.STOPPED, Message.INTERRUPTED):
        return refused("Only a failed, stopped or interrupted answer can be retried.")
    if problem := services.lost_connection(message.conversation):
        return refused(problem, 403)
    try:
        turn = services.prepare_turn(message.conversation, None, replace=message, launch=launch)
    except gate.Refused as refusal:
        return refused(refusal.message, refusal.status)
    turn.assistant_html = render_message(turn.assistant)
    html = render_message(message) + turn.assistant_html
    return Outcome(SENT, conversation=message.conversation, turns=[turn], message=message, html=html)


async def retry(user, conversation_id: int, message_id, *, on_sent: OnSent = None, tab: Tab | None = None) -> Outcome:
    """Regenerate an answer. The old one stays until the new one is complete (then the done event names it as
    `replaced`); `html` holds both articles, which replace the old one in the page. `tab`: as for send."""
    if problem := await live_problem():
        return failed(problem)
    launch = services.launcher(asyncio.get_running_loop(), tab=tab)
    try:
        outcome = await sync_to_async(prepare_retry)(user, conversation_id, message_id, launch)
    except DatabaseError:
        return failed("database_unavailable")
    return await _start(outcome, on_sent)


async def stop(user, conversation_id: int, message_id) -> Outcome:
    message = await sync_to_async(_message)(user, conversation_id, message_id)
    if message is None:
        return refused("No such message.", 404)
    if message.status == Message.STREAMING:
        await services.request_stop(message.pk)
    return Outcome(SENT, message=message)


# ---------------------------------------------------------------- branches and compare

OPERATIONS = {
    "edit": operations.edit,
    "regenerate": operations.regenerate,
    "switch": operations.switch,
    "delete": operations.delete,
    "insert": operations.insert,
    "compare": comparisons.start,
    "pick": comparisons.pick,
    "choose": choices.continue_with,  # n > 1: continue with another choice of an answer
}
LIVE = ("edit", "regenerate", "compare")  # these start an upstream call: the live channel must be up


def arguments(name: str, get: Callable[[str], object]) -> dict:
    """The operation's arguments from posted fields or a frame's (`get`: the value of a field, or None)."""

    def text(key: str) -> str:
        value = get(key)
        return value if isinstance(value, str) else ""

    if name == "insert":
        return {key: text(key) for key in ("after", "role", "content")}
    if name == "compare":
        columns = [
            {
                "model": text(f"model_{i}"),
                "params": text(f"params_{i}"),
                "fields": comparisons.fields_of(get, i),
                "version": text(f"version_{i}").strip(),
            }
            for i in range(1, comparisons.MAX_COLUMNS + 2)  # one more than the limit: refused by the service
            if text(f"model_{i}").strip() or text(f"version_{i}").strip()
        ]
        return {"content": text("content"), "columns": columns}
    args = {"message_id": get("message_id") if isinstance(get("message_id"), int | str) else None}
    if name == "edit":
        args["content"] = text("content")
    elif name == "choose":
        args["number"] = get("number")
    return args


def owned_conversation(user, conversation_id: int) -> Conversation | None:
    return Conversation.objects.for_user(user).select_related("connection").filter(pk=conversation_id).first()


async def operate(name: str, user, conversation_id: int, args: dict, *, tab: str = "", files=(), options="") -> Outcome:
    """A branch or compare operation (OPERATIONS); the other tabs then fetch the selected path again (`tab`: the
    tab that asked, which needs not). `files` (compare only): the composer's, sent to each column that takes them."""
    conversation = await sync_to_async(owned_conversation)(user, conversation_id)  # the one ownership check
    if conversation is None:
        return refused("No such conversation.", 404)
    if name in LIVE and (problem := await live_problem()):
        return failed(problem)
    try:
        if files:
            args["attachments"] = await sync_to_async(comparisons.clean_uploads)(
                conversation, args["columns"], files, options
            )
        result = await OPERATIONS[name](conversation, args)
    except operations.Refused as exc:
        return Outcome(INVALID, [str(exc)], status=400, conversation=conversation)
    except gate.Refused as refusal:
        return refused(refusal.message, refusal.status)
    except Http404 as exc:
        return refused(str(exc) or "No such message.", 404)
    await operations.announce(conversation, tab)
    outcome = Outcome(SENT, conversation=conversation)
    if isinstance(result, Message):
        outcome.message = result
    elif result is not None:
        outcome.turns = result if isinstance(result, list) else [result]
    if name == "compare":
        outcome.notice = comparisons.left_out(outcome.turns)
    return outcome


# ---------------------------------------------------------------- tool results

RESULT_PREFIX = "result:"


def results_of(fields) -> dict:
    """The result boxes of a tool-calls form: `result:<call id>` → text."""
    return {
        key[len(RESULT_PREFIX) :]: value if isinstance(value, str) else ""
        for key, value in fields.items()
        if key.startswith(RESULT_PREFIX)
    }


def _pending(user, conversation_id: int, message_id) -> Outcome:
    """The answer `message_id` (as `message`) if its calls wait for results."""
    conversation = owned_conversation(user, conversation_id)
    message_id = message_id_of(message_id)
    message = conversation and message_id and conversation.messages.filter(pk=message_id, role="assistant").first()
    if not message:
        return refused("No such answer.", 404)
    outcome = Outcome(INVALID, [NOT_WAITING], conversation=conversation, message=message)
    answer, calls = services.pending_calls(conversation)
    if calls and answer.pk == message.pk:
        outcome.kind, outcome.errors = SENT, []
    return outcome


def _articles(conversation: Conversation, message: Message, turn) -> str:
    rows = [Message.objects.get(pk=message.pk)]
    rows += list(conversation.messages.filter(role="tool", pk__gt=message.pk, pk__lt=turn.assistant.pk))
    return "".join(render_message(row) for row in rows) + render_message(turn.assistant)


async def tool_results(user, conversation_id: int, message_id, results: dict) -> Outcome:
    """Answer the tool calls of answer `message_id` (all of them at once) and continue the turn; `html` holds the
    answer, its `tool` messages and the new answer's placeholder."""
    try:
        outcome = await sync_to_async(_pending)(user, conversation_id, message_id)  # the one ownership check
        if not outcome.sent:
            return outcome
        conversation, message = outcome.conversation, outcome.message
        if problem := await live_problem():
            unavailable = failed(problem)
            unavailable.conversation, unavailable.message = conversation, message
            return unavailable
        try:
            turn = await services.submit_tool_results(conversation, results)
        except services.ToolResultsError as exc:
            return Outcome(INVALID, [str(exc)], conversation=conversation, message=message)
        except gate.Refused as refusal:
            outcome.kind, outcome.errors, outcome.status = REFUSED, [refusal.message], refusal.status
            return outcome
        outcome.turns = [turn]
        outcome.html = await sync_to_async(_articles)(conversation, message, turn)
    except DatabaseError:
        return failed("database_unavailable")
    return outcome
