from django.db import models
from django.db.models import Q

KINDS = [
    ("chat", "Chat"),
    ("rerank", "Rerank"),
    ("speech", "Speech"),
    ("embedding", "Embedding"),
    ("image", "Image generation"),
]
SCOPES = [("local", "Local API"), ("hosted", "Hosted providers"), ("connection", "One connection")]

# The capability flags a model may declare; the parameter panels read them (see catalog/params.py).
CAPABILITIES = [
    "text",
    "vision",
    "audio",
    "video",
    "pdf",
    "base64_only",
    "thinking",
    "thinking_budget",
    "reasoning_effort",
    "min_p",
    "top_k",
    "tools",
    "rerank_instruction",
    "rerank_chunking",
]


class CatalogModelQuerySet(models.QuerySet):
    def for_connection(self, connection, kind: str | None = None, *, unavailable: bool = False):
        """Models offered on a connection (its pickers): what its provider listed or the user added.

        The Local connection also sees the seeded local entries it has no own entry for (they are exactly what
        the local API lists); a hosted connection never sees the seeded well-known ids, which only lend their
        capability facts to a refresh. Models the provider stopped listing are left out unless `unavailable`.
        """
        own = self.filter(connection=connection, enabled=True)
        offered = own if unavailable else own.filter(available=True)
        if kind:
            offered = offered.filter(kind=kind)
        if not connection.is_local:
            return offered.order_by("kind", "model_id")
        seeded = self.filter(connection=None, scope="local", enabled=True).exclude(
            model_id__in=own.values_list("model_id", flat=True)
        )
        if kind:
            seeded = seeded.filter(kind=kind)
        return self.filter(Q(pk__in=offered.values("pk")) | Q(pk__in=seeded.values("pk"))).order_by("kind", "model_id")

    def known_facts(self, connection):
        """The seeded entries whose capability facts apply to ids this connection lists, by model id."""
        scope = "local" if connection.is_local else "hosted"
        return {entry.model_id: entry for entry in self.filter(connection=None, scope=scope)}


class CatalogModel(models.Model):
    """A model and what it can do. Adding one (admin, fixture or refresh) needs no code."""

    connection = models.ForeignKey(
        "connections.Connection", null=True, blank=True, on_delete=models.CASCADE, related_name="models"
    )
    scope = models.CharField(max_length=16, choices=SCOPES, default="hosted")
    model_id = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=KINDS, default="chat")
    label = models.CharField(max_length=200, blank=True)
    description = models.CharField(max_length=500, blank=True)
    enabled = models.BooleanField(default=True)
    available = models.BooleanField(default=True, help_text="Still listed by the provider (or added by hand).")
    added_by_hand = models.BooleanField(default=False)
    edited = models.JSONField(default=list, blank=True, help_text="Fields the user overrode; a refresh keeps them.")

    text = models.BooleanField(default=True)
    vision = models.BooleanField(default=False)
    audio = models.BooleanField(default=False)
    video = models.BooleanField(default=False)
    pdf = models.BooleanField(default=False)
    base64_only = models.BooleanField(default=False, help_text="Accepts images as base64 data only.")
    thinking = models.BooleanField(default=False, help_text="Supports enable_thinking.")
    thinking_budget = models.BooleanField(default=False)
    reasoning_effort = models.BooleanField(default=False)
    min_p = models.BooleanField(default=False)
    top_k = models.BooleanField(default=False, help_text="Accepts top_k (not an OpenAI parameter).")
    tools = models.BooleanField(default=False)
    rerank_instruction = models.BooleanField(default=False)
    rerank_chunking = models.BooleanField(default=False, help_text="Supports max_chunks_per_doc and overlap_tokens.")
    context_window = models.PositiveIntegerField(default=32768)
    max_output = models.PositiveIntegerField(default=4096)

    objects = CatalogModelQuerySet.as_manager()

    class Meta:
        ordering = ["kind", "model_id"]
        constraints = [
            models.UniqueConstraint(fields=["scope", "model_id"], condition=Q(connection=None), name="unique_seeded"),
            models.UniqueConstraint(fields=["connection", "model_id"], name="unique_per_connection"),
        ]

    def __str__(self) -> str:
        return self.model_id

    @property
    def multimodal(self) -> bool:
        """Messages are sent as arrays of content parts (spec 2.2)."""
        return self.vision or self.audio or self.video or self.pdf

    def capabilities(self) -> dict:
        caps = {name: getattr(self, name) for name in CAPABILITIES}
        caps.update(context_window=self.context_window, max_output=self.max_output)
        return caps

    def supports(self, capability: str | None) -> bool:
        return capability is None or bool(getattr(self, capability, False))
