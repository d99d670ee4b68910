"""Share links: a token that shows a frozen copy of one item of any kind that a feature declares (kinds.py).

A link points at its source generically (a content type and a row id); each source model holds a
`GenericRelation` to `Share` (`share_links()` below), so deleting the source deletes its links and their files.
"""

import logging
import secrets
from datetime import timedelta
from pathlib import Path

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey, GenericRelation
from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils import timezone

from playground.lib import files
from playground.sharing import kinds

log = logging.getLogger(__name__)

# 24 random bytes: 192 bits, 32 URL-safe characters.
TOKEN_BYTES = 24
TOKEN_PATTERN = r"[A-Za-z0-9_-]{32}"  # noqa: S105 (a URL pattern, not a secret)

EXPIRIES = [
    ("1h", "1 hour", timedelta(hours=1)),
    ("1d", "1 day", timedelta(days=1)),
    ("7d", "7 days", timedelta(days=7)),
    ("30d", "30 days", timedelta(days=30)),
    ("never", "Never", None),
]
EXPIRY_CHOICES = [(key, label) for key, label, _ in EXPIRIES]
KEEP = "keep"  # an edited link's expiry as it is
EXPIRY_DELTAS = {key: delta for key, _, delta in EXPIRIES}


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


class ShareQuerySet(models.QuerySet):
    def for_user(self, user):
        return self.filter(owner=user)

    def listed(self):
        """With `watching_now`, the live viewers whose sockets are open (stale rows left out)."""
        cutoff = timezone.now() - timedelta(seconds=WATCH_STALE)
        return self.annotate(watching_now=models.Count("watchers", filter=models.Q(watchers__seen__gte=cutoff)))

    def for_source(self, source):
        # By the type's natural key, not a cached id: a long-lived process never reads a stale one.
        meta = source._meta
        return self.filter(
            source_type__app_label=meta.app_label, source_type__model=meta.model_name, source_id=source.pk
        )

    def served(self):
        """Links that open at all: a deactivated owner's links stop (and come back when they are reactivated)."""
        return self.filter(owner__is_active=True)


class Share(models.Model):
    ANYONE, SIGNED_IN, TEAM = "anyone", "signed_in", "team"
    VISIBILITIES = [
        (ANYONE, "Anyone with the link"),
        (SIGNED_IN, "Signed-in users of this playground"),
        (TEAM, "Team members only"),
    ]

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="shares")
    token = models.CharField(max_length=64, unique=True, default=new_token, editable=False)
    kind = models.CharField(max_length=40, help_text="The declared kind's name (kinds.py); set from the source.")
    # The source, of any kind; its model's share_links() relation deletes its links (and their frozen files).
    source_type = models.ForeignKey(ContentType, on_delete=models.CASCADE, related_name="+")
    source_id = models.PositiveBigIntegerField()
    source = GenericForeignKey("source_type", "source_id")
    title = models.CharField(max_length=200)
    titled = models.BooleanField(default=False, help_text="The owner chose the title: an update keeps it.")
    visibility = models.CharField(max_length=16, choices=VISIBILITIES, default=ANYONE)
    # With visibility "team": the team whose members (only) may open the link; its library lists it.
    team = models.ForeignKey("connections.Team", null=True, blank=True, on_delete=models.CASCADE, related_name="shares")
    expires = models.DateTimeField(null=True, blank=True)
    live = models.BooleanField(default=False, help_text="Viewers follow new turns and answers as they stream.")
    content = models.JSONField(default=dict)
    views = models.PositiveIntegerField(default=0)
    last_viewed = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(default=timezone.now)

    objects = ShareQuerySet.as_manager()

    class Meta:
        ordering = ["-created", "-pk"]
        indexes = [models.Index(fields=["source_type", "source_id"], name="share_source")]

    def __str__(self) -> str:
        return f"{self.kind_label}: {self.title}"

    def save(self, *args, **kwargs):
        if self.source_type_id:
            # The type's row by its natural key, not the process's cached id (see for_source).
            cached = self.source_type
            self.source_type = ContentType.objects.get_or_create(app_label=cached.app_label, model=cached.model)[0]
            if not self.kind:
                self.kind = kinds.of_model(cached.model_class()).name
        super().save(*args, **kwargs)

    @property
    def declared_kind(self) -> "kinds.Kind":
        return kinds.get(self.kind)

    @property
    def kind_label(self) -> str:
        return self.declared_kind.label

    @property
    def group(self) -> str:
        return f"share.{self.pk}"

    @property
    def expired(self) -> bool:
        return self.expires is not None and self.expires <= timezone.now()

    def set_expiry(self, key: str) -> None:
        if key == KEEP:
            return
        delta = EXPIRY_DELTAS[key]
        self.expires = None if delta is None else timezone.now() + delta

    def visible_to(self, user) -> bool:
        if self.expired:
            return False
        if self.visibility == self.TEAM:
            return (
                bool(user and user.is_authenticated)
                and self.team is not None
                and self.team.memberships.filter(user=user).exists()
            )
        return self.visibility == self.ANYONE or bool(user and user.is_authenticated)

    def count_view(self) -> None:
        Share.objects.filter(pk=self.pk).update(views=models.F("views") + 1, last_viewed=timezone.now())


def share_links():
    """The relation a source model declares (`shares = share_links()`): deleting the source deletes its links."""
    return GenericRelation(Share, content_type_field="source_type", object_id_field="source_id")


def get_share(request, pk) -> Share:
    """The user's share link, or 404 for anyone else's."""
    return get_object_or_404(Share.objects.for_user(request.user), pk=pk)


class LinkGone(Http404):
    """A share link that cannot be opened; `expired` when it was (a 410 page says so), `sign_in` (the link's
    visibility) when it is for signed-in users or a team's members and the visitor is not signed in, else revoked
    or unknown."""

    def __init__(self, expired: bool = False, sign_in: str = ""):
        super().__init__("This link expired." if expired else "No such link.")
        self.expired, self.sign_in = expired, sign_in


def get_public_share(token: str, user) -> Share:
    """The share behind a token as its viewer may see it: LinkGone (a 404) when revoked, expired, not for this
    viewer or its owner was deactivated."""
    share = Share.objects.served().filter(token=token).first()
    if share is None or not share.visible_to(user):
        expired = share is not None and share.expired
        anonymous = not (user and user.is_authenticated)
        raise LinkGone(expired=expired, sign_in=share.visibility if share and not expired and anonymous else "")
    return share


def frozen_name(share_pk: int, suffix: str) -> str:
    return f"shares/{share_pk}/{secrets.token_hex(16)}{Path(suffix).suffix.lower()[:10]}"


class SharedFile(models.Model):
    """A copy of one of the source's files, made when the share was made or updated, served under its token."""

    share = models.ForeignKey(Share, on_delete=models.CASCADE, related_name="files")
    key = models.CharField(max_length=64, help_text="What the frozen content calls it (e.g. attachment-12).")
    file = models.CharField(max_length=300, help_text="Its name in the file storage (lib/files.py).")
    name = models.CharField(max_length=255)
    content_type = models.CharField(max_length=100)
    size = models.PositiveBigIntegerField()

    class Meta:
        ordering = ["pk"]
        constraints = [models.UniqueConstraint(fields=["share", "key"], name="shared_file_key")]

    def __str__(self) -> str:
        return self.name

    @property
    def path(self):
        """On this machine's disk with the default storage (None on a bucket); the code goes through lib/files.py."""
        return files.local_path(self.file)


def tell_viewers(group: str, kind: str) -> None:
    """Live viewers on any process hear it through the channel layer (a revoke closes their sockets)."""
    try:
        async_to_sync(get_channel_layer().group_send)(group, {"type": kind})
    except Exception:
        # The link is gone from the database already; a socket still open is closed by its next heartbeat.
        log.warning("Could not tell the viewers of %s", group, exc_info=True)


@receiver(post_delete, sender=Share)
def close_live_viewers(sender, instance: Share, **kwargs) -> None:
    """Revoked, or deleted with its source: its live viewers' sockets close as soon as the delete commits."""
    if instance.live:
        group = instance.group
        transaction.on_commit(lambda: tell_viewers(group, "share.revoked"))


@receiver(post_delete, sender=SharedFile)
def delete_frozen_file(sender, instance: SharedFile, **kwargs) -> None:
    name = instance.file
    transaction.on_commit(lambda: files.delete(name))


class Watcher(models.Model):
    """An open live-follow socket; stale rows (their process died) stop counting after WATCH_STALE seconds."""

    share = models.ForeignKey(Share, on_delete=models.CASCADE, related_name="watchers")
    channel = models.CharField(max_length=200, unique=True)
    seen = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.channel


WATCH_BEAT = 15
WATCH_STALE = 45


def watching(source) -> int:
    """How many follow the source live now (its links' open sockets)."""
    cutoff = timezone.now() - timedelta(seconds=WATCH_STALE)
    links = Share.objects.for_source(source)
    return Watcher.objects.filter(share__in=links, seen__gte=cutoff).count()
