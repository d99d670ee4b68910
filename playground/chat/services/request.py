"""The request body a conversation sends: the model, the kept turns, their attachments and the set parameters."""

import base64
import json
from dataclasses import dataclass, field

from django.db.models import Q
from django.utils.text import Truncator

from playground.catalog.models import CatalogModel
from playground.chat import branches
from playground.chat.forms import KIND_ADVICE, Upload, accepted_kinds, chat_params_form, human_size
from playground.chat.models import PICK_ANOTHER, Attachment, ConnectionLoss, Conversation, Message
from playground.chat.relay.usage import CHARS_PER_TOKEN
from playground.connections.models import Connection, ensure_local_connection

MAX_MESSAGES = 10  # spec 8: 1 to 10 messages per request
# The content part that carries each kind of attachment (spec 2.4): the OCR model takes PDFs through image_url.
PART_TYPES = {"image": "image_url", "pdf": "image_url", "audio": "audio_url", "video": "video_url"}
# The per-attachment options each kind's part may carry (spec 2.4; max_frams is the spec's own spelling).
PART_OPTIONS = {"image": ("detail",), "video": ("detail", "fps", "max_frams")}
PREVIEW_BYTES = 24  # the Request tab shows the first 32 base64 characters of an attachment, then its size


def connection_for(conversation: Conversation) -> Connection | None:
    """The conversation's connection, else the user's Local one; None when neither exists (LOCAL_API=off)."""
    return conversation.connection or ensure_local_connection(conversation.owner)


def lost_connection(conversation: Conversation) -> str | None:
    """In words, when the conversation's team connection was deleted (alone or with its team); else None."""
    if conversation.pk is None or conversation.connection_id is not None:
        return None
    loss = ConnectionLoss.objects.filter(conversation_id=conversation.pk).first()
    return loss.words if loss else None


def connection_notice(conversation: Conversation, user) -> str | None:
    """What the conversation page says when its team connection cannot be used any more (and nothing is sent)."""
    if conversation.connection_id is None:
        return lost_connection(conversation)
    connection = conversation.connection
    if connection.team_id is None:
        return None
    team = connection.team
    if connection.revoked:
        gone = f"The team connection “{connection.name}” of {team.name} was revoked"
        return f"{gone}, so this conversation has no connection. {PICK_ANOTHER}"
    if not team.memberships.filter(user=user).exists():
        gone = f"You are no longer a member of {team.name}"
        return f"{gone}, so its connection “{connection.name}” cannot be used. {PICK_ANOTHER}"
    return None


def chat_models(connection: Connection | None) -> list[CatalogModel]:
    if connection is None:
        return []
    return list(CatalogModel.objects.for_connection(connection, kind="chat"))


def selected_model(conversation: Conversation) -> CatalogModel | None:
    """The conversation's chat model (as pick_model would choose it) with one query, remembered on the instance."""
    connection = connection_for(conversation)
    if connection is None:  # no connection at all (the local API is off and the user has added none)
        return None
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
    left_out: list = field(default_factory=list)  # the thread's turns over MAX_MESSAGES (turns_left_out)

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def note(self) -> str:
        return " ".join(self.notes)


def eligible_history(messages) -> list[Message]:
    """The turns that go upstream: user and system messages (a system message may be inserted anywhere, as a
    few-shot example), answers with content or tool calls (failed answers are left out) and tool results."""
    return [
        m
        for m in messages
        if m.role in ("user", "system", "tool")
        or (
            m.role == "assistant" and (m.content or m.tool_calls) and m.status not in (Message.ERROR, Message.STREAMING)
        )
    ]


def spec_tool_calls(calls) -> list[dict]:
    """Tool calls as the spec spells them (2.5): id, type function, function {name, arguments as a string}."""
    out = []
    for call in calls or []:
        if not isinstance(call, dict):
            continue
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        out.append(
            {
                "id": str(call.get("id") or ""),
                "type": "function",
                "function": {"name": str(function.get("name") or ""), "arguments": arguments},
            }
        )
    return out


def history_turns(history: list[Message]) -> list[tuple]:
    """(role, text, attachments, extra) per eligible message; `extra` holds tool_calls or tool_call_id.

    An answer's tool calls go only when every one of them is answered by a tool message after it (a request
    with unanswered calls is refused by OpenAI-style providers); such an answer without text is left out.
    """
    messages = eligible_history(history)
    turns = []
    for i, m in enumerate(messages):
        if m.role == "tool":
            turns.append(("tool", m.content, [], {"tool_call_id": m.tool_call_id}))
            continue
        extra = {}
        if m.role == "assistant" and m.tool_calls:
            calls = spec_tool_calls(m.tool_calls)
            following = set()
            for later in messages[i + 1 :]:
                if later.role != "tool":
                    break
                following.add(later.tool_call_id)
            if calls and all(call["id"] in following for call in calls):
                extra["tool_calls"] = calls
            elif not m.content:
                continue
        turns.append((m.role, m.content, list(m.attachments.all()) if m.role == "user" else [], extra))
    return turns


def drop_orphan_results(turns: list[tuple]) -> list[tuple]:
    """After a cut: tool results whose call went with the cut are dropped too (they would answer nothing)."""
    calls, kept = set(), []
    for turn in turns:
        if turn[0] == "tool" and turn[3].get("tool_call_id") not in calls:
            continue
        calls.update(call["id"] for call in turn[3].get("tool_calls", []))
        kept.append(turn)
    return kept


def attachment_part(attachment: "Attachment | Upload", *, preview: bool = False) -> dict:
    """The content part of an attachment as a base64 data URI (reads the file: call from a thread).

    `detail` goes only when chosen for that attachment (the default, auto, applies otherwise), so models that
    refuse it (local/ocr) accept the part; PDFs never carry it. Videos add `fps` and `max_frams` when chosen.
    The preview carries only the start of the data and its size: the Request tab must not hold megabytes.
    """
    part_type = PART_TYPES[attachment.kind]
    if preview:
        head = base64.b64encode(attachment.read(PREVIEW_BYTES)).decode()
        data = f"{head}…({human_size(attachment.size)})"
    else:
        data = base64.b64encode(attachment.read()).decode()
    spec = {"url": f"data:{attachment.content_type};base64,{data}"}
    options = getattr(attachment, "options", None) or {}
    for name in PART_OPTIONS.get(attachment.kind, ()):
        if options.get(name) is not None:
            spec[name] = options[name]
    return {"type": part_type, part_type: spec}


def turns_left_out(turns: list, kept: list) -> list[tuple[int, str, str]]:
    """The turns a request leaves out of the thread: (place in the thread from 1, role, text)."""
    sent = {id(turn) for turn in kept}
    return [(place, turn[0], turn[1]) for place, turn in enumerate(turns, 1) if id(turn) not in sent]


def left_out_words(left: list, total: int, policy: str, *, with_next: bool = False, shown: int = 4) -> str:
    """What a request leaves out, in words: which messages, and why (the API takes at most MAX_MESSAGES).
    `total`: the thread's messages before the request, with the next one (`with_next`) when it is counted."""
    named = [f"#{place} {role} “{Truncator(text).chars(40)}”" for place, role, text in left[:shown]]
    if len(left) > shown:
        named.append(f"and {len(left) - shown} more")
    how = "the first question and the latest messages" if policy == "first_and_latest" else "the latest messages"
    counted = f"{total} messages, your next one included" if with_next else f"the thread's {total} messages"
    return (
        f"Not in this request: {len(left)} of {counted} ({', '.join(named)}). A request carries at most "
        f"{MAX_MESSAGES} messages (the API's limit), so it holds the system prompt and {how}."
    )


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
    values: dict | None = None,
) -> ChatRequest:
    """The exact JSON body for the next request: never earlier reasoning, at most 10 messages, supported params.

    A multimodal model gets each user message's attachments as content parts after its text, earlier turns
    included; attachments the model cannot take are left out with a note. With `preview`, the data URIs are cut
    short for display; otherwise the files are read (blocking: call from a thread). `values`: the parameters'
    request values as the caller parsed them from its input (typed); without them the stored ones are checked.
    """
    values, errors = request_values(conversation, model, params, values, connection)

    turns = history_turns(history)
    if next_user is not None:
        turns.append(("user", next_user, list(next_attachments), {}))
    system = conversation.system_prompt.strip()
    limit = MAX_MESSAGES - (1 if system else 0)
    kept = drop_orphan_results(apply_policy(turns, conversation.context_policy, limit))
    pairs = ([("system", system, [], {})] if system else []) + kept

    multimodal = bool(model and model.multimodal)
    kinds = accepted_kinds(model) if multimodal else []
    messages, left_out = [], []
    for role, text, attachments, extra in pairs:
        if role == "tool":
            # A tool result's content is a string in every variant.
            messages.append({"role": "tool", "tool_call_id": extra["tool_call_id"], "content": text})
            continue
        if not multimodal:
            left_out.extend(attachments)
            messages.append({"role": role, "content": text, **extra})
            continue
        parts = [{"type": "text", "text": text}]
        for attachment in attachments:
            if attachment.kind in kinds:
                parts.append(attachment_part(attachment, preview=preview))
            else:
                left_out.append(attachment)
        messages.append({"role": role, "content": parts, **extra})
    body = {"model": model.model_id if model else conversation.model_id, "messages": messages, **values}
    request = ChatRequest(body=body, errors=errors, sent_messages=len(messages), total_messages=len(turns))
    request.left_out = turns_left_out(turns, kept)

    request.notes += _notes(conversation, model, left_out, len(kept), len(turns), pairs, values)
    return request


def request_values(conversation, model, params, values, connection) -> tuple[dict, list[str]]:
    """The body's parameters: `values` as the caller parsed them (typed), else the stored ones checked; with what
    the connection and the model add (usage on streams, tools). (values, errors naming the field)."""
    if values is not None:
        values, errors = dict(values), []
    else:
        form = chat_params_form(model, stored=conversation.params if params is None else params)
        errors = [] if form.is_valid() else [e for errs in form.errors.values() for e in errs]
        values = form.request_values() if not errors else {}
    # Usage on streamed answers is opt-in for OpenAI-style providers; the connection forgets it if refused.
    connection = connection or connection_for(conversation)
    if values.get("stream") and connection is not None and connection.include_usage:
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

    return values, errors


def _notes(conversation, model, left_out: list, kept: int, total: int, pairs: list, values: dict) -> list[str]:
    """What the Request tab and the composer say about a body: attachments left out, messages cut, the window."""
    system = conversation.system_prompt.strip()
    notes = []
    if left_out:
        what = " or ".join(sorted({KIND_ADVICE[a.kind][0] for a in left_out}))
        model_id = model.model_id if model else conversation.model_id
        notes.append(
            f"{len(left_out)} attachment{'s are' if len(left_out) != 1 else ' is'} not sent: {model_id} does not "
            f"accept {what}."
        )
    if kept < total:
        how = (
            "the system prompt, the first question and the latest messages"
            if conversation.context_policy == "first_and_latest"
            else "the system prompt and the latest messages"
        )
        notes.append(
            f"This conversation has {total + (1 if system else 0)} messages; a request takes at most "
            f"{MAX_MESSAGES}, so {len(pairs)} are sent: {how}."
        )
    if model is not None:
        estimate = sum(len(text) for _, text, _, _ in pairs) // CHARS_PER_TOKEN + 4 * len(pairs)
        max_tokens = values.get("max_tokens") or 0
        window = model.context_window
        if estimate + max_tokens > window:
            notes.append(
                f"Estimated input of about {estimate} tokens plus max_tokens {max_tokens} exceeds the context "
                f"window of {model.model_id} ({window} tokens): lower max_tokens or start a new conversation."
            )
        elif estimate + max_tokens > window * 0.9:
            notes.append(
                f"Estimated input of about {estimate} tokens plus max_tokens {max_tokens} is close to the context "
                f"window of {model.model_id} ({window} tokens)."
            )
    return notes


def preview_request(conversation: Conversation, next_user: str = "") -> ChatRequest:
    connection = connection_for(conversation)
    model = pick_model(chat_models(connection), conversation.model_id) or selected_model(conversation)
    history = branches.thread(conversation)
    return build_request(conversation, model, history, next_user=next_user or "…", preview=True, connection=connection)
