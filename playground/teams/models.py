"""Teams: invite links and the audit log; the teams, their members' roles and budgets and the ledger are the gate's
(connections.models), used here by the pages."""

import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils import timezone

# The gate's policy tables live on its floor (connections.models); the teams pages, invites and audit log use them.
from playground.connections.models import (
    ADMIN,
    MANAGERS,
    MEMBER,
    OWNER,
    ROLES,
    Membership,
    Team,
    TeamQuerySet,
    UsageRecord,
)

__all__ = [
    "ADMIN",
    "MANAGERS",
    "MEMBER",
    "OWNER",
    "ROLES",
    "AuditEvent",
    "Invite",
    "Membership",
    "Team",
    "TeamQuerySet",
    "UsageRecord",
    "audit",
    "get_managed_team",
    "get_team",
]

INVITE_EXPIRIES = [
    ("1h", "1 hour", timedelta(hours=1)),
    ("1d", "1 day", timedelta(days=1)),
    ("7d", "7 days", timedelta(days=7)),
]
INVITE_EXPIRY_CHOICES = [(key, label) for key, label, _ in INVITE_EXPIRIES]
INVITE_DELTAS = {key: delta for key, _, delta in INVITE_EXPIRIES}


def new_token() -> str:
    return secrets.token_urlsafe(24)


class Invite(models.Model):
    """A join link: expires, and is single-use (max_uses=1) or multi-use (max_uses empty: until it expires)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invites")
    token = models.CharField(max_length=64, unique=True, default=new_token, editable=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    expires = models.DateTimeField()
    max_uses = models.PositiveIntegerField(null=True, blank=True)
    uses = models.PositiveIntegerField(default=0)
    revoked = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-pk"]

    def __str__(self) -> str:
        return f"Invite to {self.team} ({self.state})"

    @property
    def usable(self) -> bool:
        used_up = self.max_uses is not None and self.uses >= self.max_uses
        return not self.revoked and not used_up and self.expires > timezone.now()

    @property
    def state(self) -> str:
        if self.revoked:
            return "revoked"
        if self.max_uses is not None and self.uses >= self.max_uses:
            return "used"
        if self.expires <= timezone.now():
            return "expired"
        return "open"


class AuditEvent(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="audit")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=32)
    detail = models.CharField(max_length=300)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created", "-pk"]

    def __str__(self) -> str:
        return f"{self.action}: {self.detail}"


def audit(team, actor, action: str, detail: str) -> None:
    AuditEvent.objects.create(
        team=team, actor=actor if actor and actor.is_authenticated else None, action=action, detail=detail[:300]
    )


def get_team(request, pk) -> tuple[Team, Membership]:
    """The team and the user's membership, or 404 for a team the user is not in."""
    team = get_object_or_404(Team.objects.for_user(request.user), pk=pk)
    return team, team.memberships.get(user=request.user)


def get_managed_team(request, pk) -> tuple[Team, Membership]:
    """A team the user owns or administers; 404 for anyone else (a member is not told more than a stranger)."""
    team, membership = get_team(request, pk)
    if not membership.manages:
        raise Http404("No such team.")
    return team, membership
