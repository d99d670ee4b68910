"""The operator's side: the instance audit log, and which sessions belong to which user."""

from django.conf import settings
from django.contrib.sessions.models import Session
from django.db import models
from django.utils import timezone


class AuditEvent(models.Model):
    """Something done to the instance's accounts: by a superuser (deactivate, reactivate) or by single sign-on."""

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    subject = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=32)
    detail = models.CharField(max_length=300)
    created = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created", "-pk"]

    def __str__(self) -> str:
        return f"{self.action}: {self.detail}"


def record(action: str, detail: str, *, actor=None, subject=None) -> AuditEvent:
    actor = actor if actor is not None and actor.is_authenticated else None
    return AuditEvent.objects.create(actor=actor, subject=subject, action=action, detail=detail[:300])


class SessionRecord(models.Model):
    """A session a user signed in with (kept when they sign in; its Session row says whether it is still open)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    session_key = models.CharField(max_length=40, unique=True)
    created = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"session of {self.user}"


def open_sessions(user_ids) -> dict[int, int]:
    """Per user, how many of their sessions are still open (not signed out, not expired)."""
    live = Session.objects.filter(expire_date__gt=timezone.now()).values("session_key")
    rows = (
        SessionRecord.objects.filter(user_id__in=user_ids, session_key__in=live)
        .values("user_id")
        .annotate(n=models.Count("pk"))
    )
    return {row["user_id"]: row["n"] for row in rows}


def end_sessions(user) -> int:
    """Sign `user` out everywhere: delete every session they signed in with. Returns how many were open."""
    keys = list(SessionRecord.objects.filter(user=user).values_list("session_key", flat=True))
    ended, _ = Session.objects.filter(session_key__in=keys).delete()
    SessionRecord.objects.filter(user=user).delete()
    return ended
