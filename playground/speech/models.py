from django.conf import settings
from django.db import models
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.text import slugify

from playground.lib import files
from playground.sharing.models import share_links

# Content types of the saved files; raw PCM has no registered type a browser can play.
CONTENT_TYPES = {"mp3": "audio/mpeg", "opus": "audio/ogg", "wav": "audio/wav", "pcm": "application/octet-stream"}
EXTENSIONS = {"mp3": "mp3", "opus": "opus", "wav": "wav", "pcm": "pcm"}


class SpeechClipQuerySet(models.QuerySet):
    def for_user(self, user):
        return self.filter(owner=user)


class SpeechClip(models.Model):
    """A synthesized clip, saved to a file as its bytes arrive from the provider.

    Status is `streaming` while bytes arrive, then `complete`, or `incomplete` when the upstream broke
    off: the file then holds only what arrived and is never presented as the whole clip.
    """

    STREAMING, COMPLETE, INCOMPLETE = "streaming", "complete", "incomplete"
    STATUSES = [(STREAMING, "Streaming"), (COMPLETE, "Complete"), (INCOMPLETE, "Incomplete")]

    shares = share_links()  # its share links: deleting it deletes them
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="speech_clips")
    connection = models.ForeignKey(
        "connections.Connection", null=True, on_delete=models.SET_NULL, related_name="speech_clips"
    )
    model = models.CharField(max_length=200)
    voice = models.CharField(max_length=300, blank=True)
    references = models.JSONField(default=list, blank=True)
    text = models.TextField()
    response_format = models.CharField(max_length=8, default="mp3")
    sample_rate = models.PositiveIntegerField(default=44100)
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=STATUSES, default=STREAMING)
    file = models.CharField(max_length=300, blank=True, help_text="Its name in the file storage (lib/files.py).")
    bytes = models.BigIntegerField(default=0)
    trace_id = models.CharField(max_length=200, blank=True)
    error = models.JSONField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)
    # Stamped by the process relaying the clip (playground/lib/detached.py); stale means that process died.
    heartbeat = models.DateTimeField(default=timezone.now)

    objects = SpeechClipQuerySet.as_manager()

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"{self.model} {self.voice_label}: {self.text[:40]}"

    @property
    def path(self):
        """Where the file is on this machine's disk with the default storage (None on a bucket): for tests and
        operators; the code reads and writes through lib/files.py."""
        return files.local_path(self.file)

    @property
    def streaming(self) -> bool:
        return self.status == self.STREAMING

    @property
    def content_type(self) -> str:
        return CONTENT_TYPES[self.response_format]

    @property
    def voice_label(self) -> str:
        ids = [self.voice] if self.voice else [item.get("audio", "") for item in self.references]
        return "+".join(voice_name(value) for value in ids if value) or "default"

    def download_name(self, extension: str | None = None) -> str:
        """A descriptive file name: date, model, voice and format (and a warning when incomplete)."""
        parts = [
            self.created.strftime("%Y-%m-%d-%H%M%S"),
            slugify(self.model.replace("/", "-")),
            slugify(self.voice_label),
        ]
        if self.status == self.INCOMPLETE:
            parts.append("incomplete")
        return "_".join(parts) + "." + (extension or EXTENSIONS[self.response_format])


def voice_name(voice_id: str) -> str:
    """`local/tts:alex` -> alex, `speech:myvoice:abc:def` -> myvoice."""
    if voice_id.startswith("speech:"):
        return voice_id.split(":")[1] if voice_id.count(":") >= 1 else voice_id
    return voice_id.rsplit(":", 1)[-1]


def get_clip(request, pk) -> SpeechClip:
    """The user's clip, or 404 for anyone else's."""
    return get_object_or_404(SpeechClip.objects.for_user(request.user), pk=pk)


async def aget_clip(request, pk) -> SpeechClip:
    from django.http import Http404

    user = await request.auser()
    clip = await SpeechClip.objects.for_user(user).filter(pk=pk).afirst()
    if clip is None:
        raise Http404("No such clip.")
    return clip
