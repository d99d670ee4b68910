"""The hooks other apps call around a request: may this user send through this connection now, and what it used.

Both do nothing for a connection that is not a team's. `refusal` is checked before a request is sent (membership,
revocation, the member's monthly token budget); `record` files one UsageRecord from the provider's own usage
fields once the request has finished.
"""

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.db.models import Sum
from django.utils import timezone

from playground.connections.models import Connection
from playground.lib import metrics
from playground.teams.models import ConnectionLoss, Membership, UsageRecord
from playground.upstream.errors import UpstreamError


def month_start(now=None):
    now = timezone.localtime(now or timezone.now())
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def next_month(start):
    return (start.replace(day=28) + timezone.timedelta(days=4)).replace(day=1)


def tokens_this_month(team_id: int, user_id: int) -> int:
    rows = UsageRecord.objects.filter(team_id=team_id, user_id=user_id, created__gte=month_start())
    totals = rows.aggregate(prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens"))
    return (totals["prompt"] or 0) + (totals["completion"] or 0)


def refusal(connection, user, kind: str = "chat") -> str | None:
    """Why `user` may not send a request through `connection` now, in words; None when they may."""
    if connection is None or connection.team_id is None:
        return None
    team = connection.team
    if connection.revoked:
        return (
            f"The team connection “{connection.name}” of {team.name} was revoked, so nothing was sent. "
            "Choose another connection."
        )
    membership = Membership.objects.filter(team_id=team.pk, user=user).first()
    if membership is None:
        return (
            f"You are no longer a member of {team.name}, so its connection “{connection.name}” cannot be used and "
            "nothing was sent. Choose another connection."
        )
    budget = membership.monthly_token_budget
    if budget is not None:
        used = tokens_this_month(team.pk, user.pk)
        if used >= budget:
            metrics.budget_refused(kind)
            resets = next_month(month_start()).strftime("%-d %B")
            return (
                f"Your monthly token budget on {team.name} is used up ({used:,} of {budget:,} tokens this month), "
                f"so nothing was sent. It resets on {resets}; an owner or admin of the team can raise it."
            )
    return None


def lost_connection(conversation) -> str | None:
    """In words, when the conversation's team connection was deleted (alone or with its team); else None."""
    if conversation.pk is None or conversation.connection_id is not None:
        return None
    loss = ConnectionLoss.objects.filter(conversation_id=conversation.pk).first()
    return loss.words if loss else None


def connection_notice(conversation, user) -> str | None:
    """What the conversation page says when its team connection cannot be used any more (and nothing is sent)."""
    if conversation.connection_id is None:
        return lost_connection(conversation)
    connection = conversation.connection
    if connection.team_id is None:
        return None
    team = connection.team
    if connection.revoked:
        return (
            f"The team connection “{connection.name}” of {team.name} was revoked, so this conversation has no "
            "connection. Pick another connection to continue: nothing is sent until you do."
        )
    if not Membership.objects.filter(team_id=team.pk, user=user).exists():
        return (
            f"You are no longer a member of {team.name}, so its connection “{connection.name}” cannot be used. "
            "Pick another connection to continue: nothing is sent until you do."
        )
    return None


class TeamRefusal(UpstreamError):
    """Nothing was sent: the team connection may not be used now (shown like any refusal of the provider)."""

    @property
    def title(self) -> str:
        return "Not sent through the team connection"

    @property
    def next_step(self) -> str:
        return "Choose another connection, or ask an owner or admin of the team."

    @property
    def retryable(self) -> bool:
        return False


async def acheck(connection, user, kind: str) -> None:
    """Raise a TeamRefusal (an UpstreamError, so pages show it like the provider's) when `refusal` has a reason."""
    problem = await sync_to_async(refusal)(connection, user, kind)
    if problem:
        raise TeamRefusal(kind="http", status=403, message=problem)


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
    kind: str,
    *,
    model: str = "",
    usage: dict | None = None,
    status: str = "ok",
    audio_characters: int = 0,
    documents: int = 0,
) -> UsageRecord | None:
    """File a request through a team connection (nothing for any other connection).

    `usage` is the provider's usage object: chat's prompt_tokens, completion_tokens and
    completion_tokens_details.reasoning_tokens; rerank passes meta.tokens as input_tokens/output_tokens.
    """
    if not connection_id or not user_id:
        return None
    connection = Connection.objects.filter(pk=connection_id).exclude(team=None).first()
    if connection is None:
        return None
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        return None
    return UsageRecord.objects.create(
        team_id=connection.team_id,
        connection=connection,
        user=user,
        username=user.get_username(),
        kind=kind,
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
