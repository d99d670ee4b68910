"""What a running answer writes: its periodic flushes (with the other answers of this process, on a shared tick)
and its final row, and, for a team connection, the usage filed with the team. A part of Generation (generation.py):
each function is given the answer (answer.py) and the request body it answers."""

import logging
import time

from asgiref.sync import sync_to_async
from django.db import transaction
from django.utils import timezone

from playground.chat.models import Message
from playground.chat.relay import flushes
from playground.chat.relay.answer import Answer
from playground.connections.gate import Pass
from playground.upstream.redact import redact_key

log = logging.getLogger(__name__)

FLUSH_EVERY = 1.0  # seconds between database flushes of a running answer


async def flush(answer: Answer, body: dict) -> None:
    # The usage goes along so that an answer whose process dies keeps what was known of it.
    fields = {
        "content": "".join(answer.content),
        "reasoning": "".join(answer.reasoning),
        "seq": answer.seq,
        "trace_id": answer.trace_id,
        "usage": answer.usage or answer.estimated_usage(body),
        "choices": answer.choices(),
    }
    await flushes.flush(answer.message_id, fields)  # with the other answers of this tick, in one transaction


async def flush_every_second(answer: Answer, body: dict) -> None:
    while True:
        await flushes.until_tick(FLUSH_EVERY)
        try:
            await flush(answer, body)
        except Exception:
            log.exception("Could not flush message %s", answer.message_id)


async def finish(
    answer: Answer, body: dict, status: str, error: dict | None, *, replaces: int | None, ticket: Pass | None
) -> dict | None:
    """The answer's final row (`replaces`: the retried answer it ends; `ticket`: its pass, whose key is redacted
    from what the provider echoed). Returns the fields written, or None when the row was gone (deleted while it
    streamed)."""
    fields = {
        "content": "".join(answer.content),
        "reasoning": "".join(answer.reasoning),
        "seq": answer.seq,
        "status": status,
        "error": error,
        # A stopped or interrupted stream never got the provider's usage: it keeps an estimate.
        "usage": answer.usage
        if answer.usage or status in (Message.COMPLETE, Message.ERROR)
        else answer.estimated_usage(body),
        "finish_reason": answer.finish_reason,
        "trace_id": answer.trace_id,
        "ttft_ms": answer.ms(answer.first_token),
        "total_ms": answer.ms(time.monotonic()),
        "heartbeat": timezone.now(),
        "choices": answer.choices(),
        "tool_calls": [call for _, call in sorted(answer.tool_calls.items())] or None,
    }
    fields["tool_calls"], fields["error"] = _redacted(fields["tool_calls"], ticket), _redacted(error, ticket)
    replaces = replaces if status == Message.COMPLETE else None
    saved = await sync_to_async(_save_end)(answer.message_id, fields, replaces)
    return fields if saved else None


def _redacted(value, ticket: Pass | None):
    """`value` (tool calls, an error) without the connection's key: a provider may echo it back."""
    if value is None or ticket is None:
        return value
    key = ticket.endpoint.api_key
    if isinstance(value, str):
        return redact_key(value, key)
    if isinstance(value, list):
        return [_redacted(item, ticket) for item in value]
    if isinstance(value, dict):
        return {name: _redacted(item, ticket) for name, item in value.items()}
    return value


def _save_end(message_id: int, fields: dict, replaces: int | None) -> int:
    """The final state of an answer and, for a completed retry, the end of the answer it replaces, at once (the
    rows updated: 0 when the answer was deleted)."""
    with transaction.atomic():
        saved = Message.objects.filter(pk=message_id).update(**fields)
        if replaces and Message.objects.filter(pk=replaces).exclude(status=Message.STREAMING).exists():
            # What followed the replaced answer now follows its replacement (the retry is its sibling).
            Message.objects.filter(parent_id=replaces).update(parent_id=message_id)
            Message.objects.filter(pk=replaces).delete()
    return saved


async def record_usage(answer: Answer, body: dict, ticket: Pass | None, status: str) -> None:
    """Settle the generation's pass with the provider's usage (an estimate of what streamed when a stopped or
    interrupted answer never got it): the reservation is given back and a team connection files the figures."""
    if ticket is None:
        return
    try:
        model = str(body.get("model") or "")
        await ticket.asettle(usage=answer.usage or answer.estimated_usage(body), status=status, model=model)
    except Exception:
        log.exception("Could not record the usage of message %s", answer.message_id)
