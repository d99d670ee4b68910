"""Prompts: a named prompt owned by a user or a team, its immutable versions (v1, v2, …), the labels that point at
one version each, and the per-user tokens that let code fetch a prompt by name."""

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.http import Http404
from django.shortcuts import get_object_or_404

from playground.connections.models import Team
from playground.connections.ownership import NAME_LENGTH, OwnedByUserOrTeam  # noqa: F401 (NAME_LENGTH: the forms read it here)
from playground.sharing.models import share_links

LABEL_LENGTH = 40


class ImmutableVersion(Exception):
    """A prompt version is never changed in place: a change is a new version."""


class Prompt(OwnedByUserOrTeam):
    # A personal prompt has an owner and no team; a team's prompt has its team (and its creator as owner).
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="prompts")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="prompts")

    def latest(self) -> "PromptVersion | None":
        return super().latest()


def get_prompt(request, pk) -> Prompt:
    """A prompt the user may see (own or a team's), or 404."""
    return get_object_or_404(Prompt.objects.for_user(request.user).select_related("team"), pk=pk)


def owned_by(user, team: Team | None):
    """The prompts of one owner (the user alone, or a team): where a name must be unique."""
    return Prompt.objects.owned_by(user, team)


class ImmutableQuerySet(models.QuerySet):
    def for_user(self, user):
        return self.filter(prompt__in=Prompt.objects.for_user(user))

    def update(self, **kwargs):
        raise ImmutableVersion("prompt versions are never updated in place.")


class PromptVersion(models.Model):
    shares = share_links()
    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created = models.DateTimeField(auto_now_add=True)
    message = models.CharField(max_length=300, blank=True)
    system = models.TextField(blank=True)
    shots = models.JSONField(default=list, blank=True, help_text="Few-shot turns: [{role, content}].")
    template = models.TextField(blank=True, help_text="The user message, with {{variables}}.")
    model_id = models.CharField(max_length=200, blank=True)
    connection = models.ForeignKey(
        "connections.Connection", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    params = models.JSONField(default=dict, blank=True, help_text="The panel's stored values (tools excluded).")
    values = models.JSONField(default=dict, blank=True, help_text="The request values, typed as the panel parsed them.")
    tools = models.JSONField(default=list, blank=True)
    restored_from = models.PositiveIntegerField(null=True, blank=True)

    objects = ImmutableQuerySet.as_manager()

    class Meta:
        ordering = ["-number"]
        constraints = [models.UniqueConstraint(fields=["prompt", "number"], name="one_number_per_version")]
        indexes = [models.Index(fields=["prompt", "-number"])]

    def __str__(self) -> str:
        return f"{self.prompt.name}@v{self.number}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ImmutableVersion(f"{self}: a prompt version is never changed; save a new version instead.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ImmutableVersion(f"{self}: a prompt version is never deleted on its own.")

    @property
    def ref(self) -> str:
        return f"{self.prompt.name}@v{self.number}"

    def messages(self) -> list[dict]:
        """system, the few-shot turns and the user template, as the request's messages (template uncompiled)."""
        out = [{"role": "system", "content": self.system}] if self.system.strip() else []
        out += [{"role": shot["role"], "content": shot["content"]} for shot in self.shots]
        if self.template:
            out.append({"role": "user", "content": self.template})
        return out


class Label(models.Model):
    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, related_name="labels")
    name = models.CharField(max_length=LABEL_LENGTH)
    version = models.ForeignKey(PromptVersion, on_delete=models.CASCADE, related_name="labels")
    protected = models.BooleanField(default=False, help_text="Only admins move it.")
    moved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    moved = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["prompt", "name"], name="one_label_name_per_prompt")]

    def __str__(self) -> str:
        return f"{self.name} → v{self.version.number}"


class LabelMove(models.Model):
    """Each move of a label (the version history shows them; a team's also go to its audit log)."""

    label = models.ForeignKey(Label, on_delete=models.CASCADE, related_name="moves")
    to_number = models.PositiveIntegerField()
    from_number = models.PositiveIntegerField(null=True, blank=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-pk"]

    def __str__(self) -> str:
        return f"{self.label.name} → v{self.to_number}"


TOKEN_PREFIX = "pgp_"  # noqa: S105 (a prefix, not a secret)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ApiToken(models.Model):
    """A playground API token (for /api/prompts/): only its SHA-256 is kept; the token is shown once."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    hint = models.CharField(max_length=16, help_text="The token's first characters, to tell tokens apart.")
    hashed = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(auto_now_add=True)
    last_used = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.hint}…)"

    @classmethod
    def mint(cls, owner, name: str) -> tuple["ApiToken", str]:
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        row = cls.objects.create(owner=owner, name=name, hint=token[:10], hashed=digest(token))
        return row, token

    @classmethod
    def user_for(cls, token: str):
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        row = cls.objects.select_related("owner").filter(hashed=digest(token)).first()
        if row is None or not row.owner.is_active:
            return None
        return row


def get_version(prompt: Prompt, number) -> PromptVersion:
    try:
        number = int(number)
    except (TypeError, ValueError):
        raise Http404("No such version.") from None
    return get_object_or_404(prompt.versions, number=number)
