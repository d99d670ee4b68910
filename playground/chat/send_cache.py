"""What the sends of one chat socket reuse (ChatConsumer, commands.prepare_send): the conversation with its
connection and selected model, the attachments of its messages, and the gate's pre-check.

Nothing is reused on trust. Each send reads the conversation's and its connection's rows, and the catalog rows its
model was chosen from, in plain SQL (no ORM query to build) and compares them with the rows the cached objects were
read from: any difference (the panel, another tab's send, a connection edited or deleted, a model disabled) and the
objects are read again. The rows are always read before the objects they stamp, so a write between the two can only
cost a second read, never let a stale object through. The messages are read at every send (a branch switch, an
edit, a delete or another tab's turn changes them); an attachment belongs to its message for its whole life, so
those of messages already seen are not read again. The gate's pre-check (gate.why_not) is skipped for the connection
the gate let this socket's last send through: the gate checks again under its lock when it opens (gate.open), so a
removed member, a revoked connection or a spent budget is still refused, in the same words.
"""

from django.db.models import Q

from playground.catalog.models import CatalogModel
from playground.chat import services
from playground.chat.models import Attachment, Conversation, Message
from playground.chat.services.turns import known_attachments
from playground.connections.models import Connection
from playground.lib.prepared import Prepared


def _fields(model, prefix: str = "") -> list[str]:
    return [prefix + field.name for field in model._meta.concrete_fields]


# The conversation's row and its connection's (LEFT JOIN: it may have none).
STAMP = Prepared(
    lambda conversation, user: Conversation.objects.filter(pk=conversation, owner_id=user).values_list(
        *_fields(Conversation), *_fields(Connection, "connection__")
    ),
    conversation=int,
    user=int,
)
CONVERSATION = Prepared(
    lambda conversation: Conversation.objects.filter(pk=conversation).values_list(*_fields(Conversation)),
    conversation=int,
)
# Every catalog row the selected model can be chosen from, enabled or not.
CATALOG = Prepared(
    lambda connection, model: (
        CatalogModel.objects.filter(Q(connection_id=connection) | Q(connection=None))
        .filter(model_id=model, kind="chat")
        .order_by("pk")
        .values_list(*_fields(CatalogModel))
    ),
    connection=int,
    model=str,
)


def stamp_of(conversation_id: int, user_id: int) -> tuple | None:
    """(the conversation's row, its connection's row) as stored now; None when it is not this user's."""
    rows = STAMP.rows(conversation=conversation_id, user=user_id)
    width = len(Conversation._meta.concrete_fields)
    return (rows[0][:width], rows[0][width:]) if rows else None


def conversation_row(conversation_id: int) -> tuple:
    return CONVERSATION.rows(conversation=conversation_id)[0]


def catalog_stamp(connection_id: int, model_id: str) -> tuple:
    return tuple(CATALOG.rows(connection=connection_id, model=model_id))


class SendCache:
    """One socket's: used in the database thread only (prepare_send)."""

    def __init__(self, user, conversation_id: int):
        self.user, self.conversation_id = user, conversation_id
        self._conversation: Conversation | None = None
        self._stamp: tuple | None = None
        self._connection_id: int | None = None  # the conversation's connection in the stamp
        self._model: tuple | None = None  # (selected_model's key, the model, the catalog rows it came from)
        self._attachments: dict[int, list[Attachment]] = {}  # message pk -> its attachments
        self._admitted: int | None = None  # the connection the gate let the last send through

    def conversation(self) -> Conversation | None:
        """The conversation as stored now (None: not this user's), with its selected model when that still holds."""
        stamp = stamp_of(self.conversation_id, self.user.pk)
        if stamp is None:
            self.forget()
            return None
        if self._conversation is None or stamp != self._stamp:
            rows = Conversation.objects.for_user(self.user).select_related("connection")
            self._conversation, self._stamp = rows.filter(pk=self.conversation_id).first(), stamp
            if self._conversation is None:
                return None
            self._connection_id = self._conversation.connection_id
        conversation = self._conversation
        if conversation.connection_id is not None and conversation.model_id:
            key = (conversation.connection_id, conversation.model_id)
            catalog = catalog_stamp(*key)
            if self._model is not None and self._model[0] == key and self._model[2] == catalog:
                conversation._selected_model = self._model[:2]
            else:
                conversation.__dict__.pop("_selected_model", None)
                self._model = (key, services.selected_model(conversation), catalog)
        return conversation

    def known_attachments(self, rows: list[Message]) -> None:
        """Give the questions among `rows` the attachments already read (prepare_turn reads only the others')."""
        for row in rows:
            if row.role == "user" and row.pk in self._attachments:
                known_attachments(row, self._attachments[row.pk])

    def admits(self, connection: Connection | None) -> bool:
        """Whether the pre-check may be skipped (the gate's own check still follows)."""
        return connection is not None and connection.pk == self._admitted

    def written(self, conversation: Conversation) -> None:
        """The turn's rows were just written (called inside their transaction, which holds the conversation's row):
        the object saved is the row stored, so the next send need not read it again."""
        # Another connection than the stamp's: its row is not the one stamped.
        same = self._stamp is not None and conversation is self._conversation
        if same and conversation.connection_id == self._connection_id:
            self._stamp = (conversation_row(conversation.pk), self._stamp[1])
        else:
            self._stamp = None

    def sent(self, outcome, rows: list[Message]) -> None:
        """After prepare_send (`rows`: the messages it read): keep what a sent turn leaves true; after anything
        else forget the conversation (the panel's fields may have changed the object without saving it) and the
        gate's answer."""
        if not outcome.sent:
            self._conversation = self._stamp = self._admitted = None
            return
        turn = outcome.turns[0]
        self._admitted = turn.limits.connection_id if turn.limits is not None else None
        for message in [*rows, turn.user_message]:
            if message is None or message.role != "user" or message.pk is None:
                continue
            cached = getattr(message, "_prefetched_objects_cache", {}).get("attachments")
            if cached is not None:
                self._attachments[message.pk] = list(cached)

    def forget(self) -> None:
        self._conversation = self._stamp = self._model = self._admitted = None
