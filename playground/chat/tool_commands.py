"""The tool-results command: answer the tool calls of an answer and continue the turn (commands.py's other half:
tool_views.py and the socket action `tool_results` adapt it)."""

from asgiref.sync import sync_to_async
from django.db import DatabaseError

from playground.chat import services
from playground.chat.commands import (
    INVALID,
    REFUSED,
    SENT,
    Outcome,
    failed,
    live_problem,
    message_id_of,
    owned_conversation,
    refused,
)
from playground.chat.models import Conversation, Message
from playground.connections import gate

NOT_WAITING = "These tool calls are no longer waiting for results (answered in another tab, or the thread moved on)."

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
    return "".join(services.render_message(row) for row in rows) + services.render_message(turn.assistant)


async def tool_results(user, conversation_id: int, message_id, results: dict) -> Outcome:
    """Answer the tool calls of answer `message_id` (all of them at once) and continue the turn; `html` holds the
    answer, its `tool` messages and the new answer's placeholder."""
    if problem := await live_problem():
        return failed(problem)
    try:
        outcome = await sync_to_async(_pending)(user, conversation_id, message_id)
        if not outcome.sent:
            return outcome
        conversation, message = outcome.conversation, outcome.message
        try:
            turn = await services.submit_tool_results(conversation, user, results)
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
