"""The ledger of team connections: what the gate files when a pass is settled, and the sums a budget reads.

Every request through a team connection is one row (UsageRecord) with the provider's own usage,
under the purpose its pass was opened for; the budgets count this month's rows plus the tokens that live leases
(requests in flight) reserve. Personal connections file nothing.
"""

from datetime import timedelta

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.db.models import Sum
from django.utils import timezone

from playground.connections.models import Connection, Lease, UsageRecord
from playground.lib import detached

PURPOSE_LENGTH = 16  # a pass's purpose as a lease and the ledger keep it


def month_start(now=None):
    now = timezone.localtime(now or timezone.now())
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def next_month(start):
    return (start.replace(day=28) + timedelta(days=4)).replace(day=1)


def resets() -> str:
    return next_month(month_start()).strftime("%-d %B %Y")


def settled_tokens(team_id: int, user_id: int | None = None) -> int:
    """Prompt + completion tokens filed this month on the team (by one member, when given)."""
    rows = UsageRecord.objects.filter(team_id=team_id, created__gte=month_start())
    if user_id is not None:
        rows = rows.filter(user_id=user_id)
    totals = rows.aggregate(prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens"))
    return (totals["prompt"] or 0) + (totals["completion"] or 0)


def live_leases():
    """Leases whose process still stamps them."""
    return Lease.objects.filter(heartbeat__gte=timezone.now() - timedelta(seconds=detached.stale_seconds()))


def reserved_tokens(team_id: int, user_id: int | None = None) -> int:
    rows = live_leases().filter(team_id=team_id)
    if user_id is not None:
        rows = rows.filter(user_id=user_id)
    return rows.aggregate(tokens=Sum("tokens"))["tokens"] or 0


def tokens_this_month(team_id: int, user_id: int | None = None) -> int:
    """What counts against a budget now: the settled usage and the reservations of the requests in flight."""
    return settled_tokens(team_id, user_id) + reserved_tokens(team_id, user_id)


def _tokens(usage: dict | None) -> dict:
    usage = usage if isinstance(usage, dict) else {}
    details = usage.get("completion_tokens_details") or {}
    return {
        "prompt_tokens": _int(usage.get("prompt_tokens")),
        "completion_tokens": _int(usage.get("completion_tokens")),
        "reasoning_tokens": _int(details.get("reasoning_tokens") if isinstance(details, dict) else 0),
    }


def _int(value) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def record(
    connection_id,
    user_id,
    purpose: str,
    *,
    model: str = "",
    usage: dict | None = None,
    status: str = "ok",
    audio_characters: int = 0,
    documents: int = 0,
):
    """File one request through a team connection in the ledger with the provider's own usage (nothing for any
    other connection), under its purpose, whatever it is: no list of purposes to join, so a new feature's requests
    are filed as soon as it opens the gate. `usage` is chat's usage object; rerank passes rerank_usage(meta)."""
    if not connection_id or not user_id:
        return None
    team_id = Connection.objects.filter(pk=connection_id).values_list("team_id", flat=True).first()
    user = get_user_model().objects.filter(pk=user_id).first()
    if team_id is None or user is None:
        return None
    return UsageRecord.objects.create(
        team_id=team_id,
        connection_id=connection_id,
        user=user,
        username=user.get_username(),
        kind=purpose[:PURPOSE_LENGTH],
        model=model[:200],
        status=status[:16],
        audio_characters=audio_characters,
        documents=documents,
        **_tokens(usage),
    )


arecord = sync_to_async(record)


def rerank_usage(meta: dict | None) -> dict:
    """Rerank's meta.tokens as chat-style usage (input → prompt, output → completion)."""
    tokens = (meta or {}).get("tokens") or {}
    return {"prompt_tokens": tokens.get("input_tokens"), "completion_tokens": tokens.get("output_tokens")}
