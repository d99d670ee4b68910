import json
import uuid
from pathlib import Path

from django.conf import settings
from django.db import models, transaction
from django.db.models import Q
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.functional import cached_property

from playground import inputs
from playground.chat.tree import path_of
from playground.lib import files
from playground.lib.markdown.cache import rendered
from playground.sharing.models import share_links

TITLE_LENGTH = 60

CONTEXT_POLICIES = [
    ("latest", "Keep the system prompt and the latest messages"),
    ("first_and_latest", "Keep the system prompt, the first question and the latest messages"),
]


class ConversationQuerySet(models.QuerySet):
    def for_user(self, user):
        return self.filter(owner=user)

    def search(self, query: str):
        """Conversations whose title or any message contains the query (case-insensitive)."""
        # PostgreSQL refuses NUL in a query parameter; no text can contain one anyway.
        query = query.replace("\x00", "").strip()[:500]
        if not query:
            return self
        matching = Message.objects.filter(content__icontains=query).values("conversation_id")
        return self.filter(Q(title__icontains=query) | Q(pk__in=matching))


class Conversation(models.Model):
    shares = share_links()  # its share links: deleting it deletes them
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations")
    title = models.CharField(max_length=200, blank=True)
    system_prompt = models.TextField(blank=True)
    connection = models.ForeignKey(
        "connections.Connection", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    model_id = models.CharField(max_length=200, blank=True)
    params = models.JSONField(default=dict, blank=True)
    context_policy = models.CharField(max_length=32, choices=CONTEXT_POLICIES, default="latest")
    # The prompt version it was started from ("name@vN" stays when the version's prompt is deleted).
    prompt_version = models.ForeignKey(
        "prompts.PromptVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    prompt_ref = models.CharField(max_length=200, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    objects = ConversationQuerySet.as_manager()

    class Meta:
        ordering = ["-updated", "-pk"]
        indexes = [models.Index(fields=["owner", "-updated"])]

    def __str__(self) -> str:
        return self.title or "New conversation"

    @property
    def display_title(self) -> str:
        return self.title or "New conversation"

    def rename(self, title: str) -> None:
        self.title = title.strip()[:200]
        self.save(update_fields=["title", "updated"])

    def title_from(self, text: str) -> None:
        """Set the title from the first message: its first line, cut at a word near 60 characters."""
        if self.title:
            return
        line = " ".join(text.split())
        if len(line) > TITLE_LENGTH:
            cut = line[:TITLE_LENGTH].rsplit(" ", 1)[0] or line[:TITLE_LENGTH]
            line = cut.rstrip(" ,.;:") + "…"
        self.title = line or "New conversation"

    def duplicate(self) -> "Conversation":
        """A copy with every finished message (running generations are not copied)."""
        copy = Conversation.objects.create(
            owner=self.owner,
            title=f"{self.display_title} (copy)"[:200],
            system_prompt=self.system_prompt,
            connection=self.connection,
            model_id=self.model_id,
            params=self.params,
            context_policy=self.context_policy,
        )
        messages, attachments, parents = [], [], []
        for message in self.messages.exclude(status=Message.STREAMING).prefetch_related("attachments"):
            attachments.append(list(message.attachments.all()))
            parents.append((message.pk, message.parent_id))
            message.pk, message.parent_id = None, None
            message.conversation = copy
            messages.append(message)
        Message.objects.bulk_create(messages)
        # The same tree: each copy's parent is the copy of the original's parent.
        copies = {old: message.pk for (old, _), message in zip(parents, messages, strict=True)}
        for (_, parent), message in zip(parents, messages, strict=True):
            message.parent_id = copies.get(parent)
        Message.objects.bulk_update(messages, ["parent"], batch_size=500)
        # The copies share the stored files; a file is deleted with the last row that refers to it.
        Attachment.objects.bulk_create(
            a.copy_for(message) for message, items in zip(messages, attachments, strict=True) for a in items
        )
        return copy


def get_conversation(request, pk) -> Conversation:
    """The user's conversation, or 404 for anyone else's."""
    return get_object_or_404(Conversation.objects.for_user(request.user), pk=pk)


class Message(models.Model):
    COMPLETE = "complete"
    STREAMING = "streaming"
    STOPPED = "stopped"
    INTERRUPTED = "interrupted"
    ERROR = "error"
    STATUSES = [
        (COMPLETE, "Complete"),
        (STREAMING, "Streaming"),
        (STOPPED, "Stopped"),
        (INTERRUPTED, "Interrupted"),
        (ERROR, "Error"),
    ]
    ROLES = [("system", "System"), ("user", "User"), ("assistant", "Assistant"), ("tool", "Tool")]

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=16, choices=ROLES)
    content = models.TextField(blank=True)
    reasoning = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=STATUSES, default=COMPLETE)
    error = models.JSONField(null=True, blank=True)
    model_id = models.CharField(max_length=200, blank=True)
    params = models.JSONField(default=dict, blank=True)
    usage = models.JSONField(null=True, blank=True)
    finish_reason = models.CharField(max_length=32, blank=True)
    trace_id = models.CharField(max_length=200, blank=True)
    ttft_ms = models.PositiveIntegerField(null=True, blank=True)
    total_ms = models.PositiveIntegerField(null=True, blank=True)
    seq = models.PositiveIntegerField(default=0, help_text="Last sequence number flushed to the database.")
    heartbeat = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    choices = models.JSONField(default=list, blank=True, help_text="Text of the extra choices when n > 1.")
    tool_calls = models.JSONField(null=True, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True, help_text="The call a tool message answers.")
    # The message tree (see chat/branches.py): each message follows its parent (None: a first message); among
    # siblings (edits, regenerations, compare columns) the selected one is on the thread's path.
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    selected = models.BooleanField(default=True)
    compare = models.CharField(max_length=32, blank=True, help_text="Columns of one open comparison share this.")
    # A compare column run as a library prompt version (its system, few-shot turns and parameters): which one.
    prompt_version = models.ForeignKey(
        "prompts.PromptVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["pk"]
        indexes = [models.Index(fields=["status", "heartbeat"])]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"

    def save(self, *args, **kwargs):
        # A message created without a parent follows the end of the selected path (code that appends linearly
        # needs to know nothing of branches); chat.branches.add sets the parent explicitly (None for a root).
        if self._state.adding and self.parent_id is None and not getattr(self, "explicit_parent", False):
            self.parent_id = last_of_path(self.conversation_id)
        super().save(*args, **kwargs)

    @property
    def is_streaming(self) -> bool:
        return self.status == self.STREAMING

    @property
    def choice_count(self) -> int:
        """How many choices the answer has or will have (the request's n, or what arrived)."""
        params = self.params if isinstance(self.params, dict) else {}
        n = params.get("n")
        n = n if isinstance(n, int) and not isinstance(n, bool) else 1
        return max(n, len(self.choices or []) + 1)

    @property
    def waited_seconds(self) -> int:
        """Seconds since the answer was asked for (the composer's "waiting for the first token" counter)."""
        return max(0, int((timezone.now() - self.created).total_seconds())) if self.created else 0

    @cached_property
    def html(self) -> str:
        return rendered(self.content)

    @cached_property
    def tool_cards(self) -> dict:
        """The answer's tool calls as cards (name, pretty arguments, id, the result given) and whether they
        wait for results: only the thread's last answer waits, until every call of it is answered."""
        calls = [c for c in self.tool_calls or [] if isinstance(c, dict)]
        if not calls:
            return {"cards": [], "waiting": False}
        # What follows the answer on the selected path (another branch's messages are not its results): given by
        # branches.thread() to the answers of the path it read, else read here.
        after = getattr(self, "path_after", None)
        if after is None:
            rows = list(
                Message.objects.filter(conversation_id=self.conversation_id).only(
                    "parent", "selected", "role", "tool_call_id", "content"
                )
            )
            path = [m.pk for m in path_of(rows, annotated=False)]
            by_id = {m.pk: m for m in rows}
            after = [by_id[pk] for pk in path[path.index(self.pk) + 1 :]] if self.pk in path else []
        later = [(m.role, m.tool_call_id, m.content) for m in after]
        results = {call_id: content for role, call_id, content in later if role == "tool"}
        moved_on = any(role != "tool" for role, _, _ in later)
        typed = getattr(self, "tool_values", {})
        cards = []
        for call in calls:
            function = call.get("function") if isinstance(call.get("function"), dict) else {}
            arguments = function.get("arguments", "")
            try:
                pretty = json.dumps(inputs.loads(arguments), indent=2, ensure_ascii=False)
            except (TypeError, ValueError):
                pretty = str(arguments)
            call_id = str(call.get("id") or "")
            cards.append(
                {
                    "id": call_id,
                    "name": str(function.get("name") or ""),
                    "arguments": pretty,
                    "result": results.get(call_id),
                    "value": typed.get(call_id, ""),
                }
            )
        # Parallel calls of one function get numbered labels ("get_weather, call 2 of 2"): a screen reader (and a
        # test) tells their result boxes apart by name.
        names = [card["name"] for card in cards]
        for card in cards:
            count = names.count(card["name"])
            number = sum(1 for other in cards[: cards.index(card) + 1] if other["name"] == card["name"])
            card["label"] = f"{card['name']}, call {number} of {count}" if count > 1 else card["name"]
        waiting = self.status == self.COMPLETE and not moved_on and any(card["result"] is None for card in cards)
        return {"cards": cards, "waiting": waiting}

    def _usage(self, *path) -> int | None:
        value = self.usage
        for key in path:
            if not isinstance(value, dict):
                return None
            value = value.get(key)
        return value if isinstance(value, int) else None

    @property
    def prompt_tokens(self) -> int | None:
        return self._usage("prompt_tokens")

    @property
    def completion_tokens(self) -> int | None:
        return self._usage("completion_tokens")

    @property
    def reasoning_tokens(self) -> int | None:
        return self._usage("completion_tokens_details", "reasoning_tokens")

    @property
    def cached_tokens(self) -> int | None:
        cached = self._usage("prompt_tokens_details", "cached_tokens")
        return cached if cached is not None else self._usage("prompt_cache_hit_tokens")

    @property
    def tokens_per_second(self) -> float | None:
        """Completion tokens over the time spent generating them (after the first token)."""
        tokens = self.completion_tokens
        if not tokens or not self.total_ms:
            return None
        seconds = (self.total_ms - (self.ttft_ms or 0)) / 1000 or self.total_ms / 1000
        return round(tokens / seconds, 1) if seconds > 0 else None


def attachment_name(owner_id: int, filename: str) -> str:
    """Under MEDIA_ROOT/chat/<owner id>/, named by a random id (the original name is kept in `name`)."""
    suffix = Path(filename).suffix.lower()[:10]
    return f"chat/{owner_id}/{uuid.uuid4().hex}{suffix}"


def attachment_path(instance: "Attachment", filename: str) -> str:
    return attachment_name(instance.message.conversation.owner_id, filename)


class Attachment(models.Model):
    """A file sent with a user message; it is re-sent, as a content part, with every later request."""

    IMAGE, AUDIO, VIDEO, PDF = "image", "audio", "video", "pdf"
    KINDS = [(IMAGE, "Image"), (AUDIO, "Audio"), (VIDEO, "Video"), (PDF, "PDF")]

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="attachments")
    file = models.FileField(upload_to=attachment_path, max_length=300)
    kind = models.CharField(max_length=8, choices=KINDS)
    content_type = models.CharField(max_length=100)
    name = models.CharField(max_length=255)
    size = models.PositiveBigIntegerField()
    options = models.JSONField(
        default=dict, blank=True, help_text="Content-part options: detail (images, video), fps and max_frams (video)."
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return self.name

    @property
    def inline(self) -> bool:
        """Images, audio and video are shown in the page; anything else is downloaded."""
        return self.kind in (self.IMAGE, self.AUDIO, self.VIDEO)

    def copy_for(self, message: "Message") -> "Attachment":
        """An unsaved row of the same stored file for another message (a file is deleted with its last row)."""
        return Attachment(
            message=message,
            file=self.file.name,
            kind=self.kind,
            content_type=self.content_type,
            name=self.name,
            size=self.size,
            options=self.options,
        )

    def read(self, limit: int | None = None) -> bytes:
        """The file's bytes (blocking: call from a thread), or its first `limit` bytes."""
        with files.open_stream(self.file.name) as handle:
            return handle.read() if limit is None else handle.read(limit)


@receiver(post_delete, sender=Attachment)
def delete_unused_file(sender, instance: Attachment, **kwargs) -> None:
    name = instance.file.name

    def delete() -> None:
        if name and not Attachment.objects.filter(file=name).exists():
            instance.file.storage.delete(name)

    transaction.on_commit(delete)


def last_of_path(conversation_id: int) -> int | None:
    """The id of the last message of the selected path (one light query)."""
    rows = (
        Message.objects.filter(conversation_id=conversation_id)
        .order_by("pk")
        .values_list("pk", "parent_id", "selected")
    )
    path = path_of([_Row(*row) for row in rows], annotated=False)
    return path[-1].pk if path else None


class _Row:
    __slots__ = ("compare", "parent_id", "pk", "selected")

    def __init__(self, pk, parent_id, selected):
        self.pk, self.parent_id, self.selected, self.compare = pk, parent_id, selected, ""


PICK_ANOTHER = "Pick another connection to continue: nothing is sent until you do."


class ConnectionLoss(models.Model):
    """A conversation whose team connection was deleted (alone, or with its team). Its page says so in words and
    asks for another connection; nothing is sent (no silent switch to another provider) until one is picked."""

    DELETED, TEAM_DELETED = "deleted", "team_deleted"

    conversation = models.OneToOneField(Conversation, on_delete=models.CASCADE, related_name="+")
    connection_name = models.CharField(max_length=200)
    team_name = models.CharField(max_length=100)
    reason = models.CharField(max_length=16, default=DELETED)
    created = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.words

    @property
    def words(self) -> str:
        if self.reason == self.TEAM_DELETED:
            gone = f"The team {self.team_name} was deleted, and with it its connection “{self.connection_name}”"
        else:
            gone = f"The team connection “{self.connection_name}” of {self.team_name} was removed"
        return f"{gone}, so this conversation has no connection. {PICK_ANOTHER}"
