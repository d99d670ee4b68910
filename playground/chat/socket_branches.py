"""The branch, compare and tool-results operations as websocket actions (registered in actions.py's ACTIONS).

Each is a thin adapter over the plain service function the htmx view calls (services/actions.py, services/tools.py):
it loads the socket user's conversation, builds the same `args` from the frame's fields as the view does from its
POST, calls the function and answers `sent` with what the tab needs: `thread` (the re-rendered selected path, as
the htmx view returns it) or, for tool results, `html` (the articles, as that view returns them), and
`message_ids` (the new messages). Refused input is `invalid` (the service's words name the field and the limit);
another user's message is `refused`; the database or live channel down is `failed`.

The services already start the upstream request before they write the rows (services.launcher, as `send` does);
over the socket they also skip the HTTP middleware, the session and the CSRF check of the POST.
"""

from channels.db import database_sync_to_async
from django.http import Http404
from django.template.loader import render_to_string

from playground.chat import branches, services, views
from playground.chat.actions import Context, action
from playground.chat.models import Conversation, Message
from playground.chat.services import actions as operations
from playground.chat.services import compare as comparisons
from playground.chat.services.branches import Refused, announce
from playground.chat.services.limits import TooBusy

LIVE = ("edit", "regenerate", "compare")  # these start an upstream call: the live channel must be up
RESULT_PREFIX = "result:"


def _text(frame: dict, name: str) -> str:
    value = frame.get(name, "")
    return value if isinstance(value, str) else ""


def _message_id(frame: dict) -> object:
    value = frame.get("message_id")
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


def args_of(name: str, frame: dict) -> dict:
    """The service's `args` from a frame, exactly as branch_views.py builds them from the POST."""
    if name == "insert":
        return {key: _text(frame, key) for key in ("after", "role", "content")}
    if name == "compare":
        columns = [
            {
                "model": _text(frame, f"model_{i}"),
                "params": _text(frame, f"params_{i}"),
                "fields": comparisons.fields_of(frame.get, i),
            }
            for i in range(1, comparisons.MAX_COLUMNS + 2)  # one more than the limit: refused by the service
            if _text(frame, f"model_{i}").strip()
        ]
        return {"content": _text(frame, "content"), "columns": columns}
    args = {"message_id": _message_id(frame)}
    if name == "edit":
        args["content"] = _text(frame, "content")
    return args


def _conversation(ctx: Context) -> Conversation | None:
    return Conversation.objects.for_user(ctx.user).select_related("connection").filter(pk=ctx.conversation_id).first()


def _thread_html(conversation: Conversation) -> str:
    context = {"conversation": conversation, "thread": branches.thread(conversation), "has_connection": True}
    return render_to_string("chat/index.html#thread", context)


def new_ids(result) -> list[int]:
    """The ids of the messages an operation made or showed: a Turn's question and answer, each column's answer."""
    turns = result if isinstance(result, list) else [result]
    ids = []
    for item in turns:
        if isinstance(item, Message):
            ids.append(item.pk)
        elif item is not None:
            if item.user_message is not None and item.user_message.pk not in ids:
                ids.append(item.user_message.pk)
            ids.append(item.assistant.pk)
    return ids


async def _operate(name: str, ctx: Context, frame: dict) -> None:
    if name in LIVE and (problem := await views._live_problem()):
        await ctx.reply({"type": "failed", "error": views.RETRY_UNAVAILABLE[problem]})
        return
    conversation = await database_sync_to_async(_conversation)(ctx)
    if conversation is None:
        await ctx.reply({"type": "refused", "error": "No such conversation."})
        return
    try:
        result = await operations.ACTIONS[name](conversation, ctx.user, args_of(name, frame))
    except (Refused, TooBusy) as exc:
        await ctx.reply({"type": "invalid", "errors": [str(exc)]})
        return
    except Http404 as exc:
        await ctx.reply({"type": "refused", "error": str(exc) or "No such message."})
        return
    await announce(conversation, _text(frame, "tab"))
    html = await database_sync_to_async(_thread_html)(conversation)
    await ctx.reply({"type": "sent", "conversation": conversation.pk, "thread": html, "message_ids": new_ids(result)})


def _register(name: str) -> None:
    async def operate(ctx: Context, frame: dict) -> None:
        await _operate(name, ctx, frame)

    operate.__name__ = operate.__qualname__ = name
    action(name)(operate)


for _name in operations.ACTIONS:
    _register(_name)


# ---------------------------------------------------------------- tool results


def _pending(ctx: Context, message_id: object):
    """The conversation and its answer `message_id` if that answer's calls wait for results; else the reply."""
    try:
        message_id = int(message_id)
    except (TypeError, ValueError):
        return {"type": "invalid", "errors": ["message_id: the id of the answer whose tool calls these answer."]}
    conversation = _conversation(ctx)
    message = conversation and conversation.messages.filter(pk=message_id, role="assistant").first()
    if message is None:
        return {"type": "refused", "error": "No such answer."}
    answer, calls = services.pending_calls(conversation)
    if not calls or answer.pk != message.pk:
        words = "These tool calls are no longer waiting for results (answered in another tab, or the thread moved on)."
        return {"type": "invalid", "errors": [words]}
    return conversation, message


def _articles(conversation: Conversation, message: Message, turn) -> str:
    rows = [Message.objects.get(pk=message.pk)]
    rows += list(conversation.messages.filter(role="tool", pk__gt=message.pk, pk__lt=turn.assistant.pk))
    return "".join(services.render_message(row) for row in rows) + services.render_message(turn.assistant)


@action("tool_results")
async def tool_results(ctx: Context, frame: dict) -> None:
    """Answer the tool calls of answer `message_id` (`result:<call id>` fields, all at once) and continue the turn;
    `sent` carries the answer, its `tool` messages and the new answer's placeholder, as the htmx view returns."""
    if problem := await views._live_problem():
        await ctx.reply({"type": "failed", "error": views.RETRY_UNAVAILABLE[problem]})
        return
    outcome = await database_sync_to_async(_pending)(ctx, _message_id(frame))
    if isinstance(outcome, dict):
        await ctx.reply(outcome)
        return
    conversation, message = outcome
    results = {key[len(RESULT_PREFIX) :]: _text(frame, key) for key in frame if key.startswith(RESULT_PREFIX)}
    try:
        turn = await services.submit_tool_results(conversation, ctx.user, results)
    except services.ToolResultsError as exc:
        await ctx.reply({"type": "invalid", "errors": [str(exc)]})
        return
    html = await database_sync_to_async(_articles)(conversation, message, turn)
    ids = [message.pk, turn.assistant.pk]
    await ctx.reply({"type": "sent", "conversation": conversation.pk, "html": html, "message_ids": ids})
