from datetime import UTC, datetime

from django.conf import settings
from django.db import models
from django.shortcuts import get_object_or_404

from playground.sharing.models import share_links

TERMINAL = ("completed", "failed", "expired", "cancelled")
CANCELLABLE = ("in_queue", "in_progress", "validating")
BADGES = {
    "completed": "badge-ok",
    "failed": "badge-danger",
    "expired": "badge-danger",
    "cancelled": "badge-warn",
    "cancelling": "badge-warn",
    "in_progress": "badge-accent",
    "finalizing": "badge-accent",
}
# The batch object's timestamps (spec 2.6), in the order a batch passes through them.
TIMESTAMPS = [
    ("created_at", "Created"),
    ("in_progress_at", "Started"),
    ("finalizing_at", "Finalizing"),
    ("completed_at", "Completed"),
    ("failed_at", "Failed"),
    ("expired_at", "Expired"),
    ("cancelling_at", "Cancelling"),
    ("cancelled_at", "Cancelled"),
    ("expires_at", "Expires"),
]


class BatchQuerySet(models.QuerySet):
    def for_user(self, user):
        return self.filter(owner=user).select_related("connection")


class Batch(models.Model):
    """A batch the user submitted to a provider; `data` is the provider's last batch object."""

    shares = share_links()  # its share links: deleting it deletes them
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="batches")
    connection = models.ForeignKey("connections.Connection", on_delete=models.CASCADE, related_name="batches")
    remote_id = models.CharField(max_length=200)
    input_file_id = models.CharField(max_length=200)
    input_filename = models.CharField(max_length=255)
    request_count = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=32, default="in_queue")
    request_counts = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    output_file_id = models.CharField(max_length=200, blank=True)
    error_file_id = models.CharField(max_length=200, blank=True)
    data = models.JSONField(default=dict, blank=True)
    # Teams: the finished batch's usage was filed (exactly once, by whoever saw it finish first).
    usage_recorded = models.BooleanField(default=False)
    # A fork of a shared batch: its frozen requests and results; no provider batch stands behind it.
    copy = models.JSONField(null=True, blank=True)
    # A batch made from a library prompt version and rows of variables: the version it used.
    prompt_version = models.ForeignKey(
        "prompts.PromptVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="batches"
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    objects = BatchQuerySet.as_manager()

    class Meta:
        ordering = ["-created", "-pk"]
        verbose_name_plural = "batches"

    def __str__(self) -> str:
        return self.remote_id

    # What `apply` changes: a save of a fetched batch object writes these alone (never usage_recorded).
    SYNCED = ["data", "remote_id", "status", "request_counts", "output_file_id", "error_file_id", "metadata", "updated"]

    def apply(self, batch_object: dict) -> None:
        """Take the fields we show from a batch object the provider returned (unsaved)."""
        self.data = batch_object
        self.remote_id = str(batch_object.get("id") or self.remote_id)
        self.status = str(batch_object.get("status") or self.status)
        counts = batch_object.get("request_counts")
        self.request_counts = counts if isinstance(counts, dict) else None
        self.output_file_id = batch_object.get("output_file_id") or ""
        self.error_file_id = batch_object.get("error_file_id") or ""
        if isinstance(batch_object.get("metadata"), dict):
            self.metadata = batch_object["metadata"]

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def can_cancel(self) -> bool:
        return self.status in CANCELLABLE and self.copy is None

    @property
    def badge(self) -> str:
        return BADGES.get(self.status, "")

    @property
    def status_label(self) -> str:
        return self.status.replace("_", " ")

    @property
    def total(self) -> int:
        counts = self.request_counts or {}
        return int(counts.get("total") or self.request_count or 0)

    @property
    def done(self) -> int:
        counts = self.request_counts or {}
        return int(counts.get("completed") or 0) + int(counts.get("failed") or 0)

    @property
    def failed(self) -> int:
        return int((self.request_counts or {}).get("failed") or 0)

    @property
    def percent(self) -> int:
        if self.status == "completed":
            return 100
        return round(100 * self.done / self.total) if self.total else 0

    def timeline(self) -> list[tuple[str, datetime]]:
        """The batch object's timestamps that are set, as (label, aware datetime); the deadline only while running."""
        moments = []
        for field, label in TIMESTAMPS:
            if field == "expires_at" and self.is_terminal:
                continue
            value = self.data.get(field)
            if isinstance(value, int | float) and value > 0:
                moments.append((label, datetime.fromtimestamp(value, tz=UTC)))
        return moments

    @property
    def errors(self) -> list[str]:
        """The batch-level errors (spec 2.6: an array of strings, or null); other shapes are shown as text."""
        errors = self.data.get("errors")
        if isinstance(errors, dict) and isinstance(errors.get("data"), list):
            errors = errors["data"]
        if not isinstance(errors, list):
            return []
        return [e.get("message", str(e)) if isinstance(e, dict) else str(e) for e in errors]


def get_batch(request, pk) -> Batch:
    """The user's batch, or 404 for anyone else's."""
    return get_object_or_404(Batch.objects.for_user(request.user), pk=pk)
