"""Teams: members with a role, invite links, team connections' usage and budgets, and the audit log."""

import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils import timezone

OWNER, ADMIN, MEMBER = "owner", "admin", "member"
ROLES = [(OWNER, "Owner"), (ADMIN, "Admin"), (MEMBER, "Member")]
MANAGERS = (OWNER, ADMIN)

INVITE_EXPIRIES = [
    ("1h", "1 hour", timedelta(hours=1)),
    ("1d", "1 day", timedelta(days=1)),
    ("7d", "7 days", timedelta(days=7)),
]
INVITE_EXPIRY_CHOICES = [(key, label) for key, label, _ in INVITE_EXPIRIES]
INVITE_DELTAS = {key: delta for key, _, delta in INVITE_EXPIRIES}


class TeamQuerySet(models.QuerySet):
    def for_user(self, user):
        return self.filter(memberships__user=user)


class Team(models.Model):
    name = models.CharField(max_length=100)
    monthly_token_budget = models.PositiveIntegerField(
        null=True, blank=True, help_text="Tokens (prompt + completion) all members together may use per calendar month."
    )
    created = models.DateTimeField(auto_now_add=True)

    objects = TeamQuerySet.as_manager()

    class Meta:
        ordering = ["name", "pk"]

    def __str__(self) -> str:
        return self.name

    @property
    def owner(self):
        membership = self.memberships.filter(role=OWNER).select_related("user").first()
        return membership.user if membership else None

    def membership_of(self, user) -> "Membership | None":
        if not user or not user.is_authenticated:
            return None
        return self.memberships.filter(user=user).first()


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships")
    role = models.CharField(max_length=8, choices=ROLES, default=MEMBER)
    monthly_token_budget = models.PositiveIntegerField(
        null=True, blank=True, help_text="Tokens (prompt + completion) this member may use per calendar month."
    )
    joined = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["joined", "pk"]
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="one_membership_per_team")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"

    @property
    def manages(self) -> bool:
        return self.role in MANAGERS


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


class UsageRecord(models.Model):
    """One request through a team connection, with the provider's own usage figures."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="usage")
    connection = models.ForeignKey("connections.Connection", null=True, on_delete=models.SET_NULL, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    username = models.CharField(max_length=150)
    kind = models.CharField(max_length=16, help_text="The purpose the gate was opened for (chat, rerank, ...).")
    model = models.CharField(max_length=200, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    reasoning_tokens = models.PositiveIntegerField(default=0)
    audio_characters = models.PositiveIntegerField(default=0)
    documents = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16)
    created = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created", "-pk"]
        indexes = [models.Index(fields=["team", "user", "created"])]

    def __str__(self) -> str:
        return f"{self.username} {self.kind} {self.model} ({self.status})"

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


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
