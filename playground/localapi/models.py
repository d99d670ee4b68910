"""State of the local API: its keys, reference voices, uploaded files and batches.

Owners are recorded as a hash, never the key itself; keys are stored hashed too.
"""

from django.db import models


class ApiKey(models.Model):
    """A key the local API accepts besides LOCAL_API_KEYS, stored as its sha256 (see keys.py)."""

    digest = models.CharField(max_length=64, unique=True)
    owner = models.CharField(max_length=64, db_index=True)  # kept across rotations of the key
    label = models.CharField(max_length=100, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.label or f"key {self.digest[:8]}"


class Voice(models.Model):
    """A reference voice of one key. The seeded voices of a key have no recording.

    Deleting marks the row `deleted` (and removes its recording) rather than dropping it, so the voices
    seeded on a key's first listing are seeded once only and do not come back after their deletion.
    """

    owner = models.CharField(max_length=64, db_index=True)  # sha256 of the API key
    model = models.CharField(max_length=100)
    custom_name = models.CharField(max_length=64)
    text = models.TextField()
    uri = models.CharField(max_length=255, unique=True)
    audio = models.FileField(upload_to="localapi/voices/", blank=True)
    created = models.DateTimeField(auto_now_add=True)
    deleted = models.BooleanField(default=False)

    def __str__(self) -> str:
        return self.uri

    def as_dict(self) -> dict:
        return {"model": self.model, "customName": self.custom_name, "text": self.text, "uri": self.uri}


class File(models.Model):
    id = models.CharField(max_length=40, primary_key=True)
    owner = models.CharField(max_length=64, db_index=True)
    purpose = models.CharField(max_length=32)
    filename = models.CharField(max_length=255)
    bytes = models.BigIntegerField(default=0)
    created_at = models.BigIntegerField()
    content = models.FileField(upload_to="localapi/files/")

    def __str__(self) -> str:
        return self.id


class Batch(models.Model):
    id = models.CharField(max_length=40, primary_key=True)
    owner = models.CharField(max_length=64, db_index=True)
    endpoint = models.CharField(max_length=64)
    input_file = models.ForeignKey(File, on_delete=models.PROTECT, related_name="+")
    completion_window = models.CharField(max_length=16)
    status = models.CharField(max_length=16, default="in_queue", db_index=True)
    errors = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    replace = models.JSONField(null=True, blank=True)
    output_file = models.ForeignKey(File, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    error_file = models.ForeignKey(File, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    request_counts = models.JSONField(null=True, blank=True)
    created_at = models.BigIntegerField()
    in_progress_at = models.BigIntegerField(null=True, blank=True)
    expires_at = models.BigIntegerField()
    finalizing_at = models.BigIntegerField(null=True, blank=True)
    completed_at = models.BigIntegerField(null=True, blank=True)
    failed_at = models.BigIntegerField(null=True, blank=True)
    expired_at = models.BigIntegerField(null=True, blank=True)
    cancelling_at = models.BigIntegerField(null=True, blank=True)
    cancelled_at = models.BigIntegerField(null=True, blank=True)
    # Which server process runs it and when it last reported; a stale heartbeat lets another process resume it.
    worker = models.CharField(max_length=64, blank=True)
    heartbeat = models.DateTimeField(null=True, blank=True)
    # Where its files are stored (lib/files.py location()): only a process that stores its files there runs it.
    # Empty for batches queued before this was recorded: any process may run those.
    storage = models.CharField(max_length=255, blank=True)

    def __str__(self) -> str:
        return self.id
