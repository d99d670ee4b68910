from urllib.parse import urlsplit

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.module_loading import import_string

from playground.connections import crypto

# ---------------------------------------------------------------- the gate's policy tables
# Teams, their members' roles and budgets, and the ledger: what the gate reads and writes on every open and settle,
# so they live on its floor (the teams app above keeps the invites, the audit log and the pages). They keep the
# tables they had in the teams app (connections 0007 moved them without copying a row).

OWNER, ADMIN, MEMBER = "owner", "admin", "member"
ROLES = [(OWNER, "Owner"), (ADMIN, "Admin"), (MEMBER, "Member")]
MANAGERS = (OWNER, ADMIN)


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
        db_table = "teams_team"
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
        db_table = "teams_membership"
        ordering = ["joined", "pk"]
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="one_membership_per_team")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"

    @property
    def manages(self) -> bool:
        return self.role in MANAGERS


class UsageRecord(models.Model):
    """One request through a team connection, with the provider's own usage figures (ledger.py files it)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="usage")
    connection = models.ForeignKey("Connection", null=True, on_delete=models.SET_NULL, related_name="+")
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
        db_table = "teams_usagerecord"
        ordering = ["-created", "-pk"]
        indexes = [models.Index(fields=["team", "user", "created"], name="teams_usage_team_id_11cd61_idx")]

    def __str__(self) -> str:
        return f"{self.username} {self.kind} {self.model} ({self.status})"

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def _team_ids(user, roles=None):
    """The teams `user` belongs to (with one of `roles`, if given)."""
    memberships = Membership.objects.filter(user=user)
    if roles:
        memberships = memberships.filter(role__in=roles)
    return memberships.values("team_id")


class ConnectionQuerySet(models.QuerySet):
    def for_user(self, user):
        """The connections `user` may send requests through: their own, and the live connections of their teams.

        This is the one place a connection is resolved for a request (pickers, forms, views): a team connection
        stops being offered the moment its member leaves or is removed, or the connection is revoked.
        """
        mine = self.filter(Q(owner=user, team=None) | Q(team_id__in=_team_ids(user), revoked=False))
        mine = mine.select_related("team")
        return mine if settings.LOCAL_API else mine.exclude(is_local=True)

    def managed_by(self, user):
        """The connections `user` may edit, test, delete and refresh: their own, and their teams' when they are an
        owner or admin of the team (a member only uses a team connection)."""
        mine = self.filter(Q(owner=user, team=None) | Q(team_id__in=_team_ids(user, MANAGERS)))
        return mine if settings.LOCAL_API else mine.exclude(is_local=True)


class Connection(models.Model):
    """A provider a user can call: a base URL (the API root ending in /v1) and an encrypted API key.

    The built-in Local connection (is_local) points at the embedded local API of this same server (its URL
    comes from the settings at call time) with a key of its own, minted for its owner (see `rotate_key`).
    """

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="connections")
    name = models.CharField(max_length=100)
    base_url = models.URLField(max_length=500, blank=True)
    is_local = models.BooleanField(default=False)
    encrypted_key = models.TextField(blank=True)
    key_hint = models.CharField(max_length=16, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    last_tested = models.DateTimeField(null=True, blank=True)
    last_test_ok = models.BooleanField(null=True)
    last_test_message = models.CharField(max_length=500, blank=True)
    include_usage = models.BooleanField(
        "Ask for usage on streamed answers",
        default=True,
        help_text='Sends stream_options: {"include_usage": true}; turned off by itself if the provider rejects it.',
    )
    first_token_timeout = models.PositiveIntegerField(
        "First-token timeout (s)", default=120, help_text="How long to wait for the first token before giving up."
    )
    idle_timeout = models.PositiveIntegerField(
        "Idle timeout (s)", default=60, help_text="How long a started answer may send nothing before giving up."
    )
    # A team connection: the team's members use it and never see its key; `owner` is who added it.
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="connections")
    revoked = models.BooleanField(default=False, help_text="A revoked team connection is offered to nobody.")
    # The scheme://host:port the key was entered for: the gate sends it nowhere else (see gate.py).
    key_origin = models.CharField(max_length=300, blank=True)
    concurrency = models.PositiveIntegerField(
        "Requests at once",
        null=True,
        blank=True,
        help_text="How many requests may run through this connection at once, for everyone using it "
        "(empty: the server's default).",
    )

    objects = ConnectionQuerySet.as_manager()

    class Meta:
        ordering = ["-is_local", "name"]

    def __str__(self) -> str:
        return self.name

    @property
    def label(self) -> str:
        """The name as pickers show it: a team connection names its team."""
        return f"{self.name} (team {self.team.name})" if self.team_id else self.name

    def set_key(self, raw: str) -> None:
        """Store a key for the connection's current base URL: the gate sends it to that origin only."""
        self.encrypted_key = crypto.encrypt(raw)
        self.key_hint = crypto.mask(raw)
        self.key_origin = origin_of(self.base_url) if not self.is_local else ""

    def get_key(self) -> str:
        """The raw key (tests and the owner's own checks). Requests get theirs from gate.open(), never from here."""
        return crypto.decrypt(self.encrypted_key)

    def own_local_key(self, user) -> str:
        """The key of `user`'s own built-in Local connection, for its owner's eyes only (shown once after a
        rotation, filled into View code so that it runs as shown); "" for a team's or any other connection."""
        if not self.is_local or self.team_id or self.owner_id != getattr(user, "pk", None) or not self.encrypted_key:
            return ""
        return self.get_key()

    @property
    def masked_key(self) -> str:
        return self.key_hint

    def rotate_key(self) -> None:
        """Give the Local connection a new local API key; the old key stops working at once.

        The local API keeps the owner of the key across rotations, so voices, files and batches stay visible.
        """
        mint = local_key_minter()
        if not self.is_local or mint is None:
            raise ValueError("only the built-in Local connection has a minted key")
        old = self.get_key() if self.encrypted_key else None
        label = team_local_key_label(self.team_id) if self.team_id else local_key_label(self.owner_id)
        self.set_key(mint(label, replaces=old))
        self.save(update_fields=["encrypted_key", "key_hint"])

    @property
    def url(self) -> str:
        return settings.LOCAL_API_BASE_URL if self.is_local else self.base_url

    @property
    def slots(self) -> int:
        """How many requests may run through it at once (its own limit, else CONNECTION_CONCURRENCY)."""
        return self.concurrency or settings.CONNECTION_CONCURRENCY


def origin_of(url: str) -> str:
    """scheme://host:port of a URL (the default port written out), lowercased: what a key is bound to."""
    try:
        parts = urlsplit(url or "")
        port = parts.port or {"https": 443, "http": 80}.get(parts.scheme.lower(), 0)
    except ValueError:
        return ""
    return f"{parts.scheme.lower()}://{(parts.hostname or '').lower()}:{port}"


class Lease(models.Model):
    """A request in flight through a connection (gate.py): one of its concurrency slots, and for a team connection
    the tokens reserved against the member's and the team's budgets until it settles. A lease whose process died
    stops counting once its heartbeat is stale (playground/lib/detached.py stamps the live ones)."""

    connection = models.ForeignKey(Connection, on_delete=models.CASCADE, related_name="leases")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    purpose = models.CharField(max_length=16)
    tokens = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(default=timezone.now)
    heartbeat = models.DateTimeField(default=timezone.now, db_index=True)

    def __str__(self) -> str:
        return f"{self.purpose} through {self.connection_id} ({self.tokens} tokens reserved)"


def get_connection(request, pk) -> Connection:
    """A connection the user manages (their own, or their team's as its owner or admin), or 404 for any other."""
    return get_object_or_404(Connection.objects.managed_by(request.user), pk=pk)


def get_usable_connection(request, pk) -> Connection:
    """A connection the user may send requests through (see `for_user`), or 404 for any other."""
    return get_object_or_404(Connection.objects.for_user(request.user), pk=pk)


def last_used(rows):
    """The newest of `rows` (a user's conversations, clips, runs or batches, newest first) that went through a
    connection: every form starts on its connection (with `pick_connection`). None without history."""
    return rows.exclude(connection=None).first()


def pick_connection(connections, wanted=None) -> Connection | None:
    """The connection a form starts on, among `connections` (those the user may use, as listed): the one `wanted`
    names (a pk, its string or a Connection; the last used one) while it is among them, else the user's own
    before a team's, so a personal request is never charged to a team by default. One query for a queryset (a
    user has a handful of connections), none for a list the caller already read."""
    connections = list(connections)
    if wanted:
        try:
            pk = int(getattr(wanted, "pk", wanted))
        except (TypeError, ValueError):
            pk = None
        if found := next((c for c in connections if c.pk == pk), None):
            return found
    return next((c for c in connections if c.team_id is None), None) or (connections[0] if connections else None)


def local_key_minter():
    """The local API's key minter named by LOCAL_API_KEY_MINTER, or None when the local API is off."""
    return import_string(settings.LOCAL_API_KEY_MINTER) if settings.LOCAL_API_KEY_MINTER else None


def local_key_label(user_id) -> str:
    return f"Local connection of user {user_id}"


def team_local_key_label(team_id) -> str:
    return f"Local connection of team {team_id}"


def ensure_local_connection(user) -> Connection | None:
    """The user's built-in Local connection with its own key (None when the local API is off)."""
    mint = local_key_minter()
    if mint is None:
        return None
    connection, _ = Connection.objects.get_or_create(owner=user, is_local=True, team=None, defaults={"name": "Local"})
    if not connection.encrypted_key:
        connection.set_key(mint(local_key_label(user.pk)))
        connection.save(update_fields=["encrypted_key", "key_hint"])
    return connection


def add_team_local_connection(team, user) -> Connection | None:
    """A team's "Built-in (local API)" connection: this site's local API, served in-process like the Local one,
    with a key minted for the team (never the operator's, nor a member's). None when the local API is off."""
    mint = local_key_minter()
    if mint is None:
        return None
    connection = Connection(owner=user, team=team, is_local=True, name=TEAM_LOCAL_NAME)
    connection.set_key(mint(team_local_key_label(team.pk)))
    connection.save()
    return connection


TEAM_LOCAL_NAME = "Built-in (local API)"
