"""A send frame's upstream call started before its checks, from what the socket read while the person was typing.

The checks of a send (the conversation, its history, the panel, the model: one thread hop and a few queries) take
about as long as the local API's time to first token. While someone types, the tab sends `{"type": "warm",
...panel fields}`: the socket then reads what a send with those fields would use (`Warm`: the conversation with the
panel applied, its connection and model, the path's messages), running the same checks as a send. A send frame
whose panel fields are those gets its body built in the event loop, and the upstream call starts at once. Its
checks then run exactly as before and build the body again; the early call is adopted only when its endpoint, body
and limits are exactly those. Otherwise it is dropped before anything of it was saved or published (a generation
publishes nothing before it is bound to its row) and the checked one starts: a stale Warm costs one cancelled
upstream request, never a wrong one. Any event of the conversation (a turn starting or ending, the thread
changing) drops the Warm; the next keystroke reads it again.

Only the plain case is taken early: a personal connection, no attachment on the path, nothing generating; anything
else (or any failure building the body) takes the ordinary path.
"""

import asyncio
import logging
from contextlib import suppress
from dataclasses import dataclass

from channels.db import database_sync_to_async
from django.db.models import prefetch_related_objects
from django.http import QueryDict

from playground.catalog.models import CatalogModel
from playground.chat import branches, services, views
from playground.chat.actions import FormInput
from playground.chat.forms import ComposerForm
from playground.chat.models import Conversation, Message
from playground.connections import gate
from playground.connections.models import Connection
from playground.upstream.client import Endpoint

log = logging.getLogger(__name__)

PROBE = "…"  # the message of the send that load() checks (any valid text: the checks never read it)
REQUEST_WAIT = 0.05  # longest an early send waits for its request to be written before its checks start
READ_EVERY = 0.25  # a socket reads ahead at most this often (the tab asks once a second while someone types)


def panel_of(fields: QueryDict) -> dict:
    """The fields of a frame but the message itself."""
    return {key: fields.getlist(key) for key in fields if key != "content"}


@dataclass
class Warm:
    panel: dict
    conversation: Conversation
    connection: Connection
    model: CatalogModel | None
    history: list[Message]


def load(user, conversation_id: int, fields: QueryDict) -> Warm | None:
    """What a send with these panel fields would use now (sync code); None unless such a send is a plain case that
    its checks would accept."""
    conversation = Conversation.objects.for_user(user).select_related("connection").filter(pk=conversation_id).first()
    if conversation is None:
        return None
    rows = services.history_rows(conversation)
    if any(m.status == Message.STREAMING for m in rows):
        return None
    probe = fields.copy()
    probe["content"] = PROBE
    composer, problems, _ = views.validate_send(FormInput(user, probe), conversation, rows)
    if not composer.is_valid() or problems is not None:
        return None
    connection = services.connection_for(conversation)
    if connection.team_id is not None:  # its budget is checked against usage that moves with every request
        return None
    path = branches.path_of(rows, annotated=False)
    questions = [m for m in path if m.role == "user"]
    prefetch_related_objects(questions, "attachments")
    if any(m.attachments.all() for m in questions):  # files are read in the thread
        return None
    model = services.selected_model(conversation)
    return Warm(panel_of(fields), conversation, connection, model, path)


@dataclass
class Early:
    """An upstream call started from a Warm, waiting for the send's checks to adopt or drop it."""

    generation: services.Generation
    endpoint: Endpoint
    body: dict
    limits: services.Limits
    settled: bool = False  # adopted or dropped
    adopted: bool = False

    def adopting(self, launch):
        """The launch the send's checks call (in their thread): this call when it is exactly theirs."""

        def adopt(endpoint: Endpoint, body: dict, limits: services.Limits | None = None):
            if not self.settled and (endpoint, body, limits) == (self.endpoint, self.body, self.limits):
                self.settled = self.adopted = True
                if limits is not None and limits.ticket is not None:
                    limits.ticket.release()  # the early call holds a pass of its own
                return self.generation
            self.drop()
            return launch(endpoint, body, limits)

        return adopt

    def drop(self) -> None:
        """Cancel the call unless it was adopted (nothing after adopt or a first drop)."""
        if not self.settled:
            self.settled = True
            self.generation.abort_threadsafe()


class WarmSend:
    """One socket's Warm. `refresh` reads it in the background; `drop` forgets it, and a read under way then
    comes to nothing."""

    def __init__(self, user, conversation_id: int):
        self.user, self.conversation_id = user, conversation_id
        self.warm: Warm | None = None
        self.version = 0
        self._task: asyncio.Task | None = None
        self._read_at = -READ_EVERY

    def drop(self) -> None:
        self.version += 1
        self.warm = None

    def refresh(self, fields: QueryDict) -> None:
        if self.warm is not None and self.warm.panel == panel_of(fields):
            return  # what was read still holds
        now = asyncio.get_running_loop().time()
        if (self._task is not None and not self._task.done()) or now - self._read_at < READ_EVERY:
            return  # one read at a time per socket, and not too often: the database thread serves every socket
        self._read_at = now
        self.warm = None
        self._task = asyncio.get_running_loop().create_task(self._load(self.version, fields))

    async def _load(self, version: int, fields: QueryDict) -> None:
        try:
            warm = await database_sync_to_async(load)(self.user, self.conversation_id, fields)
        except Exception:
            log.warning("Could not read conversation %s for an early send", self.conversation_id, exc_info=True)
            return
        if self.version == version:
            self.warm = warm

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self.drop()

    async def start(self, fields: QueryDict, launch) -> Early | None:
        """Start the upstream call of a send frame now when it is a plain case; returns once its request is
        written (the checks' thread would slow the event loop's writing of it down: they share the GIL)."""
        warm = self.warm
        if warm is None or panel_of(fields) != warm.panel:
            return None
        composer = ComposerForm(fields)
        if not composer.is_valid():
            return None
        try:
            request = services.build_request(
                warm.conversation,
                warm.model,
                warm.history,
                next_user=composer.cleaned_data["content"],
                connection=warm.connection,
            )
        except Exception:  # whatever it is, the checks will say it properly
            log.debug("No early send for conversation %s", self.conversation_id, exc_info=True)
            return None
        if request.errors:
            return None
        self.drop()  # one early call per Warm: the turn it starts changes the conversation
        try:
            ticket = await gate.aopen(warm.connection, self.user, "chat", body=request.body)
        except gate.Refused:
            return None  # the checks will say it properly
        limits = services.limits_of(warm.connection, ticket)
        try:
            generation = launch(ticket.endpoint, request.body, limits)
        except BaseException:
            await ticket.arelease()
            raise
        with suppress(TimeoutError):
            await asyncio.wait_for(generation.requested.wait(), REQUEST_WAIT)
        return Early(generation, ticket.endpoint, request.body, limits)
