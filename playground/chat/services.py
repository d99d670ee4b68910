"""Chat generations: the request body a conversation sends, and the server-side runner that streams it.

A generation belongs to the server process that started it, never to a browser tab. It streams from the
upstream in an asyncio task, numbers each delta, publishes coalesced deltas to the channel-layer group
`conversation.<pk>` and flushes what arrived to the database every second. It also listens on its own
channel, reachable through the group `generation.<message pk>`, so any websocket on any process can ask it for
a snapshot (to join mid-stream without gap or duplicate) or tell it to stop.
"""

import asyncio
import base64
import logging
import time
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import timedelta

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import Q
from django.template.loader import render_to_string
from django.utils import timezone

from playground.catalog.models import CatalogModel
from playground.chat.forms import KIND_ADVICE, Upload, accepted_kinds, chat_params_form, human_size
from playground.chat.models import Attachment, Conversation, Message, attachment_name
from playground.chat.rendering import BlockRenderer
from playground.connections.models import Connection, ensure_local_connection
from playground.lib import detached
from playground.upstream import client
from playground.upstream.client import Endpoint
from playground.upstream.errors import UpstreamError

log = logging.getLogger(__name__)

MAX_MESSAGES = 10  # spec 8: 1 to 10 messages per request
FRAME = 0.02  # deltas within one frame are merged into one websocket message
FLUSH_EVERY = 1.0  # seconds between database flushes of a running answer
SNAPSHOT_TIMEOUT = 1.0  # how long a subscriber waits for the generator before reading the database
CHARS_PER_TOKEN = 4
# The content part that carries each kind of attachment (spec 2.4): the OCR model takes PDFs through image_url.
PART_TYPES = {"image": "image_url", "pdf": "image_url", "audio": "audio_url", "video": "video_url"}
PREVIEW_BYTES = 24  # the Request tab shows the first 32 base64 characters of an attachment, then its size
KIND = "chat"  # generations in the background-work registry (playground/lib/detached.py), keyed by message pk
LIVE_LOST_NOTICE = "This tab may have missed live deltas; the saved answer is complete."


def conversation_group(pk: int) -> str:
    return f"conversation.{pk}"


def generation_group(pk: int) -> str:
    return f"generation.{pk}"


# ---------------------------------------------------------------- the request body


def connection_for(conversation: Conversation) -> Connection:
    return conversation.connection or ensure_local_connection(conversation.owner)


def chat_models(connection: Connection) -> list[CatalogModel]:
    return list(CatalogModel.objects.for_connection(connection, kind="chat"))


def selected_model(conversation: Conversation) -> CatalogModel | None:
    """The conversation's chat model (as pick_model would choose it) with one query, remembered on the instance."""
    connection = connection_for(conversation)
    key = (connection.pk, conversation.model_id)
    cached = getattr(conversation, "_selected_model", None)
    if cached is None or cached[0] != key:
        if conversation.model_id:
            # for_connection narrowed to one id, without its subqueries: the connection's own entry wins over
            # the seeded one (the Local connection's only), and one the provider stopped listing still counts.
            visible = Q(connection=connection)
            if connection.is_local:
                visible |= Q(connection=None, scope="local")
            rows = CatalogModel.objects.filter(visible, model_id=conversation.model_id, kind="chat", enabled=True)
            model = min(rows, key=lambda row: row.connection_id is None, default=None)
        else:
            model = CatalogModel.objects.for_connection(connection, kind="chat").first()
        cached = conversation._selected_model = (key, model)
    return cached[1]


def pick_model(models: list[CatalogModel], model_id: str) -> CatalogModel | None:
    for model in models:
        if model.model_id == model_id:
            return model
    return None if model_id else (models[0] if models else None)


@dataclass
class ChatRequest:
    body: dict
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    sent_messages: int = 0
    total_messages: int = 0

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def note(self) -> str:
        return " ".join(self.notes)


def eligible_history(messages) -> list[Message]:
    """The turns that go upstream: user messages and answers with content (failed answers are left out)."""
    return [
        m
        for m in messages
        if m.role == "user"
        or (m.role == "assistant" and m.content and m.status not in (Message.ERROR, Message.STREAMING))
    ]


def attachment_part(attachment: "Attachment | Upload", *, preview: bool = False) -> dict:
    """The content part of an attachment as a base64 data URI (reads the file: call from a thread).

    `detail` is never sent (the default, auto, applies), so models that refuse it (local/ocr) accept the part.
    The preview carries only the start of the data and its size: the Request tab must not hold megabytes.
    """
    part_type = PART_TYPES[attachment.kind]
    if preview:
        head = base64.b64encode(attachment.read(PREVIEW_BYTES)).decode()
        data = f"{head}…({human_size(attachment.size)})"
    else:
        data = base64.b64encode(attachment.read()).decode()
    return {"type": part_type, part_type: {"url": f"data:{attachment.content_type};base64,{data}"}}


def apply_policy(turns: list, policy: str, limit: int) -> list:
    if len(turns) <= limit:
        return turns
    if policy == "first_and_latest" and limit >= 2:
        first = next((i for i, turn in enumerate(turns) if turn[0] == "user"), 0)
        latest = turns[-(limit - 1) :]
        if first >= len(turns) - (limit - 1):
            return turns[-limit:]
        return [turns[first], *latest]
    return turns[-limit:]


def build_request(
    conversation: Conversation,
    model: CatalogModel | None,
    history: list[Message],
    *,
    next_user: str | None = None,
    next_attachments: list[Upload] = (),
    params: dict | None = None,
    preview: bool = False,
    connection: Connection | None = None,
) -> ChatRequest:
    """The exact JSON body for the next request: never earlier reasoning, at most 10 messages, supported params.

    A multimodal model gets each user message's attachments as content parts after its text, earlier turns
    included; attachments the model cannot take are left out with a note. With `preview`, the data URIs are cut
    short for display; otherwise the files are read (blocking: call from a thread).
    """
    form = chat_params_form(model, stored=conversation.params if params is None else params)
    errors = [] if form.is_valid() else [e for errs in form.errors.values() for e in errs]
    values = form.request_values() if not errors else {}
    # Usage on streamed answers is opt-in for OpenAI-style providers; the connection forgets it if refused.
    if values.get("stream") and (connection or connection_for(conversation)).include_usage:
        values["stream_options"] = {"include_usage": True}
    if values.get("enable_thinking") is False:
        values.pop("thinking_budget", None)
        values.pop("reasoning_effort", None)
    if isinstance(values.get("response_format"), str):
        values["response_format"] = {"type": values["response_format"]}

    stored = conversation.params if params is None else params
    if model is not None and model.tools and stored.get("tools"):
        values["tools"] = stored["tools"]
        values["tool_choice"] = "auto"

    turns = [
        (m.role, m.content, list(m.attachments.all()) if m.role == "user" else []) for m in eligible_history(history)
    ]
    if next_user is not None:
        turns.append(("user", next_user, list(next_attachments)))
    system = conversation.system_prompt.strip()
    limit = MAX_MESSAGES - (1 if system else 0)
    kept = apply_policy(turns, conversation.context_policy, limit)
    pairs = ([("system", system, [])] if system else []) + kept

    multimodal = bool(model and model.multimodal)
    kinds = accepted_kinds(model) if multimodal else []
    messages, left_out = [], []
    for role, text, attachments in pairs:
        if not multimodal:
            left_out.extend(attachments)
            messages.append({"role": role, "content": text})
            continue
        parts = [{"type": "text", "text": text}]
        for attachment in attachments:
            if attachment.kind in kinds:
                parts.append(attachment_part(attachment, preview=preview))
            else:
                left_out.append(attachment)
        messages.append({"role": role, "content": parts})
    body = {"model": model.model_id if model else conversation.model_id, "messages": messages, **values}
    request = ChatRequest(body=body, errors=errors, sent_messages=len(messages), total_messages=len(turns))

    if left_out:
        what = " or ".join(sorted({KIND_ADVICE[a.kind][0] for a in left_out}))
        model_id = model.model_id if model else conversation.model_id
        request.notes.append(
            f"{len(left_out)} attachment{'s are' if len(left_out) != 1 else ' is'} not sent: {model_id} does not "
            f"accept {what}."
        )
    if len(kept) < len(turns):
        how = (
            "the system prompt, the first question and the latest messages"
            if conversation.context_policy == "first_and_latest"
            else "the system prompt and the latest messages"
        )
        request.notes.append(
            f"This conversation has {len(turns) + (1 if system else 0)} messages; a request takes at most "
            f"{MAX_MESSAGES}, so {len(messages)} are sent: {how}."
        )
    if model is not None:
        estimate = sum(len(text) for _, text, _ in pairs) // CHARS_PER_TOKEN + 4 * len(pairs)
        max_tokens = values.get("max_tokens") or 0
        window = model.context_window
        if estimate + max_tokens > window:
            request.notes.append(
                f"Estimated input of about {estimate} tokens plus max_tokens {max_tokens} exceeds the context "
                f"window of {model.model_id} ({window} tokens): lower max_tokens or start a new conversation."
            )
        elif estimate + max_tokens > window * 0.9:
            request.notes.append(
                f"Estimated input of about {estimate} tokens plus max_tokens {max_tokens} is close to the context "
                f"window of {model.model_id} ({window} tokens)."
            )
    return request


def preview_request(conversation: Conversation, next_user: str = "") -> ChatRequest:
    connection = connection_for(conversation)
    model = pick_model(chat_models(connection), conversation.model_id) or selected_model(conversation)
    history = list(conversation.messages.prefetch_related("attachments"))
    return build_request(conversation, model, history, next_user=next_user or "…", preview=True, connection=connection)


# ---------------------------------------------------------------- starting a turn


@dataclass
class Turn:
    conversation: Conversation
    user_message: Message | None
    assistant: Message
    endpoint: Endpoint
    request: ChatRequest
    headers: dict = field(default_factory=dict)
    generation: "Generation | None" = None
    assistant_html: str = ""
    replaces: Message | None = None
    limits: "Limits | None" = None


def launcher(loop: asyncio.AbstractEventLoop, headers: dict | None = None):
    """For prepare_turn (which runs in a thread): start a generation on `loop` at once, bound to its row later."""

    def launch(endpoint: Endpoint, body: dict, limits: "Limits | None" = None) -> Generation:
        generation = Generation(endpoint, body, headers=headers, loop=loop, limits=limits)
        loop.call_soon_threadsafe(generation.begin)
        return generation

    return launch


def prepare_turn(
    conversation: Conversation,
    content: str | None,
    *,
    attachments: list[Upload] = (),
    replace: Message | None = None,
    launch=None,
) -> Turn:
    """Save the user message (when given) and the assistant placeholder, and build the request (sync code).

    `replace` is an answer to regenerate: a new placeholder follows it, and it is deleted only once the new
    answer is complete (a failed retry loses nothing). With `launch`
    (see launcher) the upstream call starts as soon as the body is built, so the writes and the rendering of the
    placeholder overlap with the upstream's time to first token; what arrives meanwhile waits in memory until
    the generation knows its message.
    """
    connection = connection_for(conversation)
    model = selected_model(conversation)
    history = (
        conversation.messages.exclude(status=Message.STREAMING)
        .only("role", "content", "status")
        .prefetch_related("attachments")
    )
    if replace is not None:
        history = history.exclude(pk=replace.pk)
    request = build_request(
        conversation, model, list(history), next_user=content, next_attachments=attachments, connection=connection
    )
    endpoint = connection.endpoint()
    generation = launch(endpoint, request.body, limits_of(connection)) if launch is not None else None
    if generation is not None and replace is not None:
        generation.replaces = replace.pk
    stored: list[str] = []
    try:
        if content is not None:
            stored = store_uploads(conversation, attachments)
        with transaction.atomic():
            user_message = None
            if content is not None:
                user_message = Message.objects.create(conversation=conversation, role="user", content=content)
                save_attachments(user_message, attachments, stored)
                conversation.title_from(content)
            if model is not None and not conversation.model_id:
                conversation.model_id = model.model_id
            conversation.save()
            params = {k: v for k, v in request.body.items() if k not in ("model", "messages")}
            assistant = Message.objects.create(
                conversation=conversation,
                role="assistant",
                status=Message.STREAMING,
                model_id=request.body["model"],
                params=params,
                heartbeat=timezone.now(),
            )
    except BaseException:
        if generation is not None:
            generation.abort_threadsafe()
        # Nothing half-made: the files written for rows that were not saved go too.
        storage = Attachment._meta.get_field("file").storage
        for name in stored:
            storage.delete(name)
        raise
    if generation is not None:
        generation.bind_threadsafe(assistant)
    return Turn(
        conversation,
        user_message,
        assistant,
        endpoint,
        request,
        generation=generation,
        replaces=replace,
        limits=limits_of(connection),
    )


def store_uploads(conversation: Conversation, uploads: list[Upload]) -> list[str]:
    """Write the files (before the transaction that creates their rows, which must stay short)."""
    storage = Attachment._meta.get_field("file").storage
    return [storage.save(attachment_name(conversation.owner_id, u.name), ContentFile(u.data)) for u in uploads]


def save_attachments(message: Message, uploads: list[Upload], names: list[str]) -> None:
    Attachment.objects.bulk_create(
        Attachment(message=message, file=name, kind=u.kind, content_type=u.content_type, name=u.name, size=u.size)
        for u, name in zip(uploads, names, strict=True)
    )


def render_message(message: Message) -> str:
    return render_to_string("chat/_message.html", {"message": message})


async def start_turn(turn: Turn) -> "Generation":
    """Start the generation (unless prepare_turn launched it) and announce its placeholder to the other tabs.

    The announcement goes after the upstream call started: a tab that sees a delta for an unknown message
    subscribes anyway.
    """
    if turn.generation is None:
        turn.generation = start(
            turn.assistant, turn.endpoint, turn.request.body, headers=turn.headers, limits=turn.limits
        )
        turn.generation.replaces = turn.replaces.pk if turn.replaces else None
    html = turn.assistant_html or await sync_to_async(render_message)(turn.assistant)
    try:
        await get_channel_layer().group_send(
            conversation_group(turn.conversation.pk),
            {"type": "chat.start", "message_id": turn.assistant.pk, "html": html},
        )
    except Exception as exc:
        # The generation runs and saves its answer regardless; other tabs see it when they reload.
        turn.generation.lost_live(exc)
    return turn.generation


class LiveUnavailable(Exception):
    """The channel layer cannot be reached: a turn started now could not be watched live nor stopped."""


async def check_live() -> None:
    """Raise LiveUnavailable unless the channel layer answers (a Redis PING; the in-memory layer always does).

    Called before a send writes anything, so that a dead Redis leaves nothing half-made.
    """
    layer = get_channel_layer()
    connection = getattr(layer, "connection", None)
    if connection is None:
        return
    try:
        await asyncio.wait_for(connection(0).ping(), timeout=5)
    except Exception as exc:
        raise LiveUnavailable(f"{type(exc).__name__}: {exc}") from exc


async def send(
    conversation: Conversation, content: str, *, attachments: list[Upload] = (), headers: dict | None = None
) -> Turn:
    launch = launcher(asyncio.get_running_loop(), headers)
    turn = await sync_to_async(prepare_turn)(conversation, content, attachments=attachments, launch=launch)
    turn.headers = headers or {}
    await start_turn(turn)
    return turn


# ---------------------------------------------------------------- the runner


_END = object()


def rejects_stream_options(error: UpstreamError) -> bool:
    """A 400 whose message names stream_options or include_usage: the provider does not take them."""
    text = (error.message or "").lower()
    return error.status in (400, 422) and ("stream_options" in text or "include_usage" in text)


@dataclass
class Limits:
    """How long a generation waits for its first token and then between chunks (from its connection)."""

    first_token: float = 120
    idle: float = 60
    connection_id: int | None = None

    def no_answer(self) -> UpstreamError:
        return UpstreamError(
            kind="timeout",
            message=f"No first token after {_seconds(self.first_token)}: the provider accepted the request but "
            "has not started answering. Retry, or raise the first-token timeout of the connection.",
        )

    def silent(self, received: int) -> UpstreamError:
        return UpstreamError(
            kind="timeout",
            message=f"The provider sent nothing for {_seconds(self.idle)} after {received} chunks, so the answer "
            "was ended; what arrived is kept. Retry, or raise the idle timeout of the connection.",
        )

    async def paced(self, stream, generation: "Generation", first: asyncio.Timeout):
        """The stream's chunks; after the first token, a silence longer than the idle timeout ends it in words."""
        chunks = aiter(stream)
        while True:
            started = generation.first_token is not None or bool(generation.tool_calls)
            if not started:
                chunk = await anext(chunks, _END)
            else:
                first.reschedule(None)
                # asyncio.timeout rather than wait_for: on 3.11 wait_for swallows a Stop that lands as a chunk arrives.
                try:
                    async with asyncio.timeout(self.idle):
                        chunk = await anext(chunks, _END)
                except TimeoutError:
                    raise self.silent(generation.chunks) from None
            if chunk is _END:
                return
            yield chunk


def _seconds(value: float) -> str:
    return f"{value:g} s"


def limits_of(connection: Connection) -> Limits:
    return Limits(
        first_token=connection.first_token_timeout or 120,
        idle=connection.idle_timeout or 60,
        connection_id=connection.pk,
    )


def running(message_id: int) -> "Generation | None":
    """The generation of this message if it runs in this process."""
    return detached.get(KIND, message_id)


def start(
    message: Message, endpoint: Endpoint, body: dict, *, headers: dict | None = None, limits: "Limits | None" = None
) -> "Generation":
    generation = Generation(endpoint, body, headers=headers, limits=limits)
    generation.begin()
    generation.bind(message.pk, message.conversation_id)
    return generation


async def request_stop(message_id: int) -> None:
    """Stop a generation wherever it runs (this process or another one on the same channel layer)."""
    local = running(message_id)
    if local is not None:
        local.stop()
        return
    try:
        await get_channel_layer().group_send(generation_group(message_id), {"type": "generation.stop"})
    except Exception:
        log.warning("Could not ask for a stop of message %s: the channel layer is unavailable", message_id)


class Generation:
    def __init__(
        self, endpoint: Endpoint, body: dict, *, headers: dict | None = None, loop=None, limits: Limits | None = None
    ):
        # Known once the assistant row exists (bind); the upstream call may start before.
        self.message_id: int | None = None
        self.conversation_id: int | None = None
        self.loop = loop
        self._bound: asyncio.Future | None = None
        self.endpoint = endpoint
        self.body = body
        self.headers = headers or {}
        self.task: asyncio.Task | None = None
        self.work: asyncio.Task | None = None
        self.stop_requested = False
        self.replaces: int | None = None  # a retried answer, deleted once this one is complete
        self.live_lost = False  # a publish failed: some tab may have missed deltas
        self.limits = limits or Limits()

        self.seq = 0
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.extra: dict[int, list[str]] = {}
        self.tool_calls: dict[int, dict] = {}
        self.usage: dict | None = None
        self.finish_reason = ""
        self.trace_id = ""
        self.started = time.monotonic()
        self.first_token: float | None = None
        self.chunks = 0

        # What was received but not yet published, and what the websockets have been sent so far.
        self._pending_text: list[str] = []
        self._pending_reasoning: list[str] = []
        self._wake = asyncio.Event()
        self._closing = False
        self.published_seq = 0
        self.renderer = BlockRenderer()
        self.blocks: list[str] = []
        self.tail = ""
        self.published_content: list[str] = []
        self.published_reasoning: list[str] = []
        self.publishes = 0
        self._timing = settings.DEBUG_RELAY_TIMING
        self._pending_since: float | None = None

    # -- life cycle (begin, bind and abort run on the event loop)

    def begin(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._bound = self.loop.create_future()
        self.task = detached.spawn(self.run(), name="generation")

    def bind(self, message_id: int, conversation_id: int) -> None:
        self.message_id, self.conversation_id = message_id, conversation_id
        detached.track(KIND, message_id, self)
        self.task.set_name(f"generation-{message_id}")
        if not self._bound.done():
            self._bound.set_result(None)

    def bind_threadsafe(self, message: Message) -> None:
        self.loop.call_soon_threadsafe(self.bind, message.pk, message.conversation_id)

    def abort_threadsafe(self) -> None:
        self.loop.call_soon_threadsafe(lambda: self.task.cancel())

    # -- control

    def stop(self) -> None:
        self.stop_requested = True
        if self.work is not None and not self.work.done():
            self.work.cancel()

    cancel = stop  # detached.cancel(KIND, pk)

    # -- the upstream call

    async def _call(self) -> None:
        if self.stop_requested:
            raise asyncio.CancelledError
        if self.body.get("stream"):
            try:
                await self._stream()
            except UpstreamError as error:
                # Some providers refuse stream_options; ask once more without it and let the connection forget it.
                if not (rejects_stream_options(error) and "stream_options" in self.body and not self.chunks):
                    raise
                self.body = {k: v for k, v in self.body.items() if k != "stream_options"}
                if self.limits.connection_id:
                    await Connection.objects.filter(pk=self.limits.connection_id).aupdate(include_usage=False)
                await self._stream()
        else:
            try:
                result = await asyncio.wait_for(
                    client.chat(self.endpoint, self.body, self.headers), self.limits.first_token
                )
            except TimeoutError:
                raise self.limits.no_answer() from None
            self.trace_id = result.trace_id
            self._apply_response(result.data if isinstance(result.data, dict) else {})

    async def _stream(self) -> None:
        # The first-token timeout covers connecting and the response headers too; paced() lifts it once the
        # answer has started and watches the silences between chunks instead.
        try:
            async with asyncio.timeout(self.limits.first_token) as first:
                async with client.chat_stream(self.endpoint, self.body, self.headers) as stream:
                    self.trace_id = stream.trace_id
                    async for chunk in self.limits.paced(stream, self, first):
                        if self.stop_requested:
                            raise asyncio.CancelledError
                        self._apply(chunk)
        except TimeoutError:
            raise self.limits.no_answer() from None

    def _add(self, text: str, reasoning: str) -> None:
        if self.first_token is None:
            self.first_token = time.monotonic()
        if self._timing and self._pending_since is None:
            self._pending_since = time.time()
        self.seq += 1
        if text:
            self.content.append(text)
            self._pending_text.append(text)
        if reasoning:
            self.reasoning.append(reasoning)
            self._pending_reasoning.append(reasoning)
        self._wake.set()

    def _apply(self, chunk: dict) -> None:
        self.chunks += 1
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            index = choice.get("index") or 0
            delta = choice.get("delta") or {}
            text = delta.get("content") or ""
            reasoning = delta.get("reasoning_content") or ""
            if index == 0:
                if choice.get("finish_reason"):
                    self.finish_reason = choice["finish_reason"]
                for call in delta.get("tool_calls") or []:
                    self._merge_tool_call(call)
                if text or reasoning:
                    self._add(text, reasoning)
            elif text:
                self.extra.setdefault(index, []).append(text)

    def _merge_tool_call(self, call: dict) -> None:
        # OpenAI-style streams send the id and name once, then only the index and fragments of the arguments.
        if self.first_token is None:
            self.first_token = time.monotonic()
        empty = {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
        slot = self.tool_calls.setdefault(call.get("index", len(self.tool_calls)), empty)
        # The first id wins: some providers repeat an id (or a fresh one) on later fragments.
        slot["id"] = slot["id"] or call.get("id") or ""
        function = call.get("function") or {}
        slot["function"]["name"] += function.get("name") or ""
        slot["function"]["arguments"] += function.get("arguments") or ""

    def _apply_response(self, data: dict) -> None:
        self.usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
        for choice in data.get("choices") or []:
            message = choice.get("message") or {}
            if (choice.get("index") or 0) == 0:
                self.finish_reason = choice.get("finish_reason") or ""
                for index, call in enumerate(message.get("tool_calls") or []):
                    self.tool_calls[index] = call
                if message.get("content") or message.get("reasoning_content"):
                    self._add(message.get("content") or "", message.get("reasoning_content") or "")
            else:
                self.extra[choice["index"]] = [message.get("content") or ""]

    # -- publishing

    async def _publish(self, layer) -> None:
        if not (self._pending_text or self._pending_reasoning):
            return
        # Everything up to the await happens at once, so a snapshot always matches what was published.
        text, self._pending_text = "".join(self._pending_text), []
        reasoning, self._pending_reasoning = "".join(self._pending_reasoning), []
        if text:
            blocks, self.tail = self.renderer.feed(text)
            self.blocks.extend(blocks)
        else:
            blocks = []
        self.published_content.append(text)
        self.published_reasoning.append(reasoning)
        self.published_seq = self.seq
        self.publishes += 1
        event = {
            "type": "chat.delta",
            "message_id": self.message_id,
            "seq": self.seq,
            "blocks": blocks,
            "tail": self.tail,
            "reasoning": reasoning,
            "text": text,
        }
        if self._timing:
            event["t"], self._pending_since = self._pending_since, None
        await layer.group_send(conversation_group(self.conversation_id), event)

    async def _publish_loop(self, layer) -> None:
        # The first delta after a pause goes out at once; the ones that follow within a frame are merged.
        # It is never cancelled mid-send (a delta would be lost): run() sets _closing and waits for it to end.
        while not self._closing:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._publish(layer)
            except Exception as exc:
                self.lost_live(exc)
            if not self._closing:
                await asyncio.sleep(FRAME)

    def snapshot(self) -> dict:
        return {
            "type": "chat.snapshot",
            "message_id": self.message_id,
            "seq": self.published_seq,
            "blocks": list(self.blocks),
            "tail": self.tail,
            "reasoning": "".join(self.published_reasoning),
            "content": "".join(self.published_content),
        }

    def lost_live(self, exc: BaseException) -> None:
        """A channel-layer failure costs the live view, never the answer: it is still saved whole."""
        if not self.live_lost:
            log.warning("Generation of message %s continues without live deltas: %r", self.message_id, exc)
        self.live_lost = True

    async def _join(self, layer) -> tuple[str | None, asyncio.Task | None]:
        """Listen on a channel of our own, in the group any process can reach us through (stop, snapshot)."""
        channel = None
        try:
            channel = await layer.new_channel()
            await layer.group_add(generation_group(self.message_id), channel)
        except Exception as exc:
            self.lost_live(exc)
            return channel, None
        return channel, asyncio.create_task(self._listen(layer, channel))

    async def _listen(self, layer, channel: str) -> None:
        while True:
            try:
                message = await layer.receive(channel)
            except Exception as exc:
                self.lost_live(exc)
                return
            if message.get("type") == "generation.close":
                return
            if message.get("type") == "generation.stop":
                self.stop()
            elif message.get("type") == "generation.snapshot" and message.get("reply_to"):
                await layer.send(message["reply_to"], self.snapshot())

    @staticmethod
    async def _close_listener(layer, channel: str, listener: asyncio.Task) -> None:
        """End the listener with a message rather than by cancelling it: a cancelled receive on the Redis layer
        can leave a blocking pop behind that swallows the next message for any websocket of this process."""
        with suppress(Exception):
            await layer.send(channel, {"type": "generation.close"})
        try:
            await asyncio.wait_for(asyncio.shield(listener), timeout=5)
        except (TimeoutError, Exception):
            listener.cancel()
            with suppress(asyncio.CancelledError, Exception):
                await listener

    # -- persistence

    def _ms(self, moment: float | None) -> int | None:
        return None if moment is None else round((moment - self.started) * 1000)

    async def _flush(self) -> None:
        # The usage goes along so that an answer whose process dies keeps what was known of it.
        await Message.objects.filter(pk=self.message_id, status=Message.STREAMING).aupdate(
            content="".join(self.content),
            reasoning="".join(self.reasoning),
            seq=self.seq,
            trace_id=self.trace_id,
            usage=self.usage,
            heartbeat=timezone.now(),
        )

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_EVERY)
            try:
                await self._flush()
            except Exception:
                log.exception("Could not flush message %s", self.message_id)

    async def _finish(self, status: str, error: dict | None) -> None:
        fields = {
            "content": "".join(self.content),
            "reasoning": "".join(self.reasoning),
            "seq": self.seq,
            "status": status,
            "error": error,
            "usage": self.usage,
            "finish_reason": self.finish_reason,
            "trace_id": self.trace_id,
            "ttft_ms": self._ms(self.first_token),
            "total_ms": self._ms(time.monotonic()),
            "heartbeat": timezone.now(),
            "choices": ["".join(parts) for _, parts in sorted(self.extra.items())],
            "tool_calls": [call for _, call in sorted(self.tool_calls.items())] or None,
        }
        replaces = self.replaces if status == Message.COMPLETE else None
        await sync_to_async(_save_end)(self.message_id, fields, replaces)

    # -- the whole life of a generation

    async def run(self) -> None:
        # The upstream call first; the rest needs the message, which the caller is saving meanwhile.
        self.work = asyncio.create_task(self._call())
        try:
            await self._bound
        except asyncio.CancelledError:
            self.work.cancel()
            with suppress(BaseException):
                await self.work
            raise
        status, error = Message.COMPLETE, None
        layer = get_channel_layer()
        channel, listener, helpers = None, None, []
        try:
            helpers.append(asyncio.create_task(self._flush_loop()))
            channel, listener = await self._join(layer)
            helpers.append(asyncio.create_task(self._publish_loop(layer)))
            await self.work
        except asyncio.CancelledError:
            # Cancelled from outside (the process is shutting down) rather than by Stop: keep it as interrupted.
            status = Message.INTERRUPTED if asyncio.current_task().cancelling() else Message.STOPPED
        except UpstreamError as exc:
            status, error = Message.ERROR, exc.as_dict()
            if not error.get("trace_id"):
                error["trace_id"] = self.trace_id
        except Exception as exc:
            log.exception("Generation of message %s failed", self.message_id)
            status, error = Message.ERROR, self._internal_error(exc)
        finally:
            # Every path releases what the generation took: the upstream response, the helpers, the channel.
            # Shielded: a second cancel (shutdown) must not cut the release and the final save short.
            await asyncio.shield(self._close(layer, channel, listener, helpers, status, error))

    async def _close(self, layer, channel, listener, helpers, status: str, error: dict | None) -> None:
        try:
            await self._release(layer, channel, listener, helpers)
            await self._end(layer, channel, status, error)
        finally:
            detached.untrack(KIND, self.message_id, self)

    def _internal_error(self, exc: Exception) -> dict:
        return {
            "kind": "internal",
            "status": None,
            "code": None,
            "title": "The playground failed",
            "message": f"{type(exc).__name__}: {exc}",
            "next_step": "Retry; if it persists, check the server log.",
            "limit_type": None,
            "retry_after": None,
            "retryable": True,
            "trace_id": self.trace_id,
        }

    async def _release(self, layer, channel: str | None, listener: asyncio.Task | None, helpers: list) -> None:
        if not self.work.done():
            self.work.cancel()
        with suppress(BaseException):
            await self.work
        if helpers:
            helpers[0].cancel()  # the flusher; the publisher ends by itself once _closing is set
        self._closing = True
        self._wake.set()
        if listener is not None:
            await self._close_listener(layer, channel, listener)
        for helper in helpers:
            with suppress(BaseException):
                await helper

    async def _end(self, layer, channel: str | None, status: str, error: dict | None) -> None:
        """Make the row final, then tell the viewers: a tab that hears `done` reads a finished message."""
        try:
            await self._finish(status, error)
        except Exception:
            # Left streaming, no longer stamped: the heartbeat sweep ends it as interrupted with what was flushed.
            log.exception("Could not save the end of message %s", self.message_id)
            return
        message = await Message.objects.filter(pk=self.message_id).afirst()
        html = "" if message is None else await sync_to_async(render_message)(message)
        try:
            # Live viewers get every delta before the final render.
            await self._publish(layer)
            if channel is not None:
                await layer.group_discard(generation_group(self.message_id), channel)
            if message is None:  # deleted mid-stream
                return
            event = {
                "type": "chat.error" if status == Message.ERROR else "chat.done",
                "message_id": self.message_id,
                "seq": self.seq,
                "status": status,
                "html": html,
            }
            if self.replaces and status == Message.COMPLETE:
                event["replaced"] = self.replaces
            if self.live_lost:
                event["notice"] = LIVE_LOST_NOTICE
            await layer.group_send(conversation_group(self.conversation_id), event)
        except Exception as exc:
            self.lost_live(exc)


def _save_end(message_id: int, fields: dict, replaces: int | None) -> None:
    """The final state of an answer and, for a completed retry, the end of the answer it replaces, at once."""
    with transaction.atomic():
        Message.objects.filter(pk=message_id).update(**fields)
        if replaces:
            Message.objects.filter(pk=replaces).exclude(status=Message.STREAMING).delete()


# ---------------------------------------------------------------- recovery


def sweep(cutoff, live: list, conversation: Conversation | None = None) -> int:
    """End the streaming messages nobody stamped since `cutoff` (their process died) as interrupted, keeping
    what was flushed (content, reasoning, usage); `live` are this process's own. Returns how many."""
    stale = Message.objects.filter(Q(heartbeat__lt=cutoff) | Q(heartbeat=None), status=Message.STREAMING)
    if conversation is not None:
        stale = stale.filter(conversation=conversation)
    return stale.exclude(pk__in=live).update(status=Message.INTERRUPTED)


def beat(live: list) -> None:
    Message.objects.filter(pk__in=live, status=Message.STREAMING).update(heartbeat=timezone.now())


def mark_interrupted(conversation: Conversation | None = None) -> int:
    """The sweep at once (a page or a websocket looking at a conversation does not wait for the next one)."""
    cutoff = timezone.now() - timedelta(seconds=detached.stale_seconds())
    return sweep(cutoff, detached.keys(KIND), conversation)


async def snapshot_from_database(message: Message) -> dict:
    """A snapshot built from what was flushed (the generator is gone or did not answer)."""
    renderer = BlockRenderer()
    blocks, tail = await sync_to_async(renderer.feed, thread_sensitive=False)(message.content)
    return {
        "type": "chat.snapshot",
        "message_id": message.pk,
        "seq": message.seq,
        "blocks": blocks,
        "tail": tail,
        "reasoning": message.reasoning,
        "content": message.content,
    }
