"""What a running answer writes: its periodic flushes (with the other answers of this process, on a shared tick)
and its final row, and, for a team connection, the usage filed with the team. A mixin of Generation."""

import logging
import time

from asgiref.sync import sync_to_async
from django.db import transaction
from django.utils import timezone

from playground.chat.models import Message
from playground.chat.relay import flushes
from playground.chat.relay.usage import estimated_usage
from playground.upstream.redact import redact_key

log = logging.getLogger(__name__)

FLUSH_EVERY = 1.0  # seconds between database flushes of a running answer


class AnswerRows:
    def _ms(self, moment: float | None) -> int | None:
        return None if moment is None else round((moment - self.started) * 1000)

    async def _flush(self) -> None:
        # The usage goes along so that an answer whose process dies keeps what was known of it.
        fields = {
            "content": "".join(self.content),
            "reasoning": "".join(self.reasoning),
            "seq": self.seq,
            "trace_id": self.trace_id,
            "usage": self.usage or self._estimated(),
            "choices": self._choices(),
        }
        await flushes.flush(self.message_id, fields)  # with the other answers of this tick, in one transaction

    async def _flush_loop(self) -> None:
        while True:
            await flushes.until_tick(FLUSH_EVERY)
            try:
                await self._flush()
            except Exception:
                log.exception("Could not flush message %s", self.message_id)

    def _estimated(self) -> dict | None:
        if not (self.content or self.reasoning):
            return None
        return estimated_usage(self.body, len(self.content), len(self.reasoning))

    async def _finish(self, status: str, error: dict | None) -> None:
        fields = {
            "content": "".join(self.content),
            "reasoning": "".join(self.reasoning),
            "seq": self.seq,
            "status": status,
            "error": error,
            # A stopped or interrupted stream never got the provider's usage: it keeps an estimate.
            "usage": self.usage if self.usage or status in (Message.COMPLETE, Message.ERROR) else self._estimated(),
            "finish_reason": self.finish_reason,
            "trace_id": self.trace_id,
            "ttft_ms": self._ms(self.first_token),
            "total_ms": self._ms(time.monotonic()),
            "heartbeat": timezone.now(),
            "choices": self._choices(),
            "tool_calls": [call for _, call in sorted(self.tool_calls.items())] or None,
        }
        fields["tool_calls"], fields["error"] = self._redacted(fields["tool_calls"]), self._redacted(error)
        replaces = self.replaces if status == Message.COMPLETE else None
        await sync_to_async(_save_end)(self.message_id, fields, replaces)

    def _redacted(self, value):
        """`value` (tool calls, an error) without the connection's key: a provider may echo it back."""
        ticket = self.limits.ticket if self.limits is not None else None
        if value is None or ticket is None:
            return value
        key = ticket.endpoint.api_key
        if isinstance(value, str):
            return redact_key(value, key)
        if isinstance(value, list):
            return [self._redacted(item) for item in value]
        if isinstance(value, dict):
            return {name: self._redacted(item) for name, item in value.items()}
        return value


def _save_end(message_id: int, fields: dict, replaces: int | None) -> None:
    """The final state of an answer and, for a completed retry, the end of the answer it replaces, at once."""
    with transaction.atomic():
        Message.objects.filter(pk=message_id).update(**fields)
        if replaces and Message.objects.filter(pk=replaces).exclude(status=Message.STREAMING).exists():
            # What followed the replaced answer now follows its replacement (the retry is its sibling).
            Message.objects.filter(parent_id=replaces).update(parent_id=message_id)
            Message.objects.filter(pk=replaces).delete()


async def record_usage(generation: AnswerRows, status: str) -> None:
    """Settle the generation's pass with the provider's usage (an estimate of what streamed when a stopped or
    interrupted answer never got it): the reservation is given back and a team connection files the figures."""
    ticket = generation.limits.ticket if generation.limits is not None else None
    if ticket is None:
        return
    try:
        model = str(generation.body.get("model") or "")
        await ticket.asettle(usage=generation.usage or generation._estimated(), status=status, model=model)
    except Exception:
        log.exception("Could not record the usage of message %s", generation.message_id)
