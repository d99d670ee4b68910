"""Tool round trips: the results the user gives for an answer's tool calls continue the turn.

`submit_tool_results(conversation, results)` is the one operation; the tool results command (commands.py) calls
it for the htmx view and the websocket action alike. The answer that called the tools is the thread's last one;
every call of it is answered at once (parallel calls go together), as `tool` messages with `tool_call_id`, then a
new answer is generated from the history user → assistant with `tool_calls` → tool messages.
"""

import asyncio

from asgiref.sync import sync_to_async

from playground.chat import branches
from playground.chat.forms import MESSAGE_LIMIT
from playground.chat.models import Conversation, Message
from playground.chat.relay.display import render_message
from playground.chat.services.request import spec_tool_calls
from playground.chat.services.turns import Turn, launcher, prepare_turn, start_turn


class ToolResultsError(ValueError):
    """The results cannot continue the turn; the message names the call and what is wrong."""


def pending_calls(conversation: Conversation, rows: list[Message] | None = None) -> tuple[Message | None, list[dict]]:
    """The last answer and those of its tool calls no tool message answers yet ([] when nothing waits).
    `rows`: the conversation's messages when the caller has them (history_rows), else they are read."""
    if rows is None:
        # "conversation" too: the related manager reads it on every row (one query per message when deferred).
        rows = conversation.messages.only(
            "conversation", "role", "status", "tool_calls", "tool_call_id", "parent", "selected"
        )
    path = branches.path_of(list(rows), annotated=False)  # the selected branch's thread
    index = next((i for i in range(len(path) - 1, -1, -1) if path[i].role in ("user", "assistant")), None)
    last = path[index] if index is not None else None
    # Only a complete answer waits: a stopped or failed one's calls may be cut short (its card has no boxes).
    if last is None or last.role != "assistant" or not last.tool_calls or last.status != Message.COMPLETE:
        return None, []
    answered = {m.tool_call_id for m in path[index + 1 :] if m.role == "tool"}
    return last, [call for call in spec_tool_calls(last.tool_calls) if call["id"] not in answered]


def clean_results(conversation: Conversation, results: dict) -> list[tuple[str, str]]:
    """(call id, text) for every pending call, in the calls' order; raises ToolResultsError naming the call."""
    _, calls = pending_calls(conversation)
    if not calls:
        raise ToolResultsError("results: no tool call is waiting for a result in this conversation.")
    if not isinstance(results, dict):
        raise ToolResultsError("results: expected an object of call id → result text.")
    known = {call["id"] for call in calls}
    unknown = [key for key in results if key not in known]
    if unknown:
        raise ToolResultsError(f"results[{unknown[0]}]: not a pending tool call of the last answer.")
    cleaned, errors = [], []
    for call in calls:
        name, call_id = call["function"]["name"], call["id"]
        text = results.get(call_id)
        if not isinstance(text, str) or not text.strip():
            errors.append(f"Result of {name} ({call_id}): empty; write what the tool returned.")
        elif len(text) > MESSAGE_LIMIT:
            errors.append(
                f"Result of {name} ({call_id}): {len(text)} characters; the limit is {MESSAGE_LIMIT} characters."
            )
        else:
            cleaned.append((call_id, text))
    if errors:
        raise ToolResultsError(" ".join(errors))
    return cleaned


def prepare_tool_results(conversation: Conversation, results: dict, *, launch=None) -> Turn:
    """Check and save the results and the new answer's placeholder (sync code; see prepare_turn). The caller
    (commands.tool_results) read the conversation as the user's own."""
    cleaned = clean_results(conversation, results)
    turn = prepare_turn(conversation, None, tool_results=cleaned, launch=launch)
    # The other tabs hear of the tool messages with the new answer's placeholder (one `start`, both articles).
    answered = conversation.messages.filter(role="tool", tool_call_id__in=[c for c, _ in cleaned])
    rows = answered.filter(pk__lt=turn.assistant.pk).order_by("pk")
    turn.assistant_html = "".join(render_message(row) for row in rows) + render_message(turn.assistant)
    return turn


async def submit_tool_results(conversation: Conversation, results: dict, *, headers: dict | None = None) -> Turn:
    """Answer the last answer's tool calls with `results` ({call id: text}) and start the next answer."""
    launch = launcher(asyncio.get_running_loop(), headers)
    turn = await sync_to_async(prepare_tool_results)(conversation, results, launch=launch)
    turn.headers = headers or {}
    await start_turn(turn)
    return turn
