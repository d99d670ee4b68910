"""What the administration page shows per account, in a fixed number of queries for a page of accounts."""

from dataclasses import dataclass, field

from django.db.models import Count, IntegerField, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce

from playground.chat.models import Message
from playground.operators.models import open_sessions
from playground.sso.models import Identity
from playground.teams.models import Membership
from playground.teams.usage import month_start


@dataclass
class Row:
    user: object
    memberships: list = field(default_factory=list)
    answers: int = 0
    tokens: int = 0
    sessions: int = 0
    groups: list | None = None  # the provider's groups at the last single sign-on; None: never signed in so


def _tokens(key: str):
    return Coalesce(Sum(Cast(KT(f"usage__{key}"), IntegerField())), 0)


def rows_for(users: list) -> list[Row]:
    rows = {user.pk: Row(user) for user in users}
    ids = list(rows)
    for membership in Membership.objects.filter(user_id__in=ids).select_related("team").order_by("team__name"):
        rows[membership.user_id].memberships.append(membership)
    usage = (
        Message.objects.filter(conversation__owner_id__in=ids, role="assistant", created__gte=month_start())
        .values("conversation__owner_id")
        .annotate(n=Count("pk"), prompt=_tokens("prompt_tokens"), completion=_tokens("completion_tokens"))
    )
    for item in usage:
        row = rows[item["conversation__owner_id"]]
        row.answers, row.tokens = item["n"], item["prompt"] + item["completion"]
    for user_id, n in open_sessions(ids).items():
        rows[user_id].sessions = n
    for identity in Identity.objects.filter(user_id__in=ids).order_by("pk"):
        rows[identity.user_id].groups = identity.groups
    return list(rows.values())
