"""Export a conversation as JSON (OpenAI-compatible messages) or Markdown, and import such JSON back.

The JSON keeps what the conversation needs to be recreated: settings, tools, each message with its reasoning,
tool calls, the extra choices an n > 1 answer had (its branches) and its attachments as data URIs. A pasted
OpenAI `messages` array imports too. Every error names the field (or the line of bad JSON) and the limit.
"""

import base64
import binascii
import json
import re
from dataclasses import dataclass, field

from django.core.files.base import ContentFile
from django.db import transaction

from playground import inputs
from playground.chat import branches
from playground.chat.forms import ACCEPTED_TYPES, MAX_ATTACHMENT_BYTES, human_size, imported_params
from playground.chat.models import Attachment, Conversation, Message, attachment_name

FORMAT = "playground.conversation"
VERSION = 1
MAX_IMPORT_MB = 50
MAX_IMPORT_BYTES = MAX_IMPORT_MB * 1024 * 1024
MAX_MESSAGES = 2000
MAX_TEXT = 1_000_000  # characters per message
ROLES = ("system", "user", "assistant", "tool")
PARTS = {"image_url": "image", "audio_url": "audio", "video_url": "video"}
DATA_URI = re.compile(r"^data:([\w.+-]+/[\w.+-]+);base64,(.*)$", re.DOTALL)
SETTINGS = ("system_prompt", "model", "params", "context_policy")


class ImportError_(ValueError):
    """A file or paste that cannot be imported; the message names the field or line and the limit."""


# ---------------------------------------------------------------- export


def _data_uri(attachment: Attachment) -> str:
    return f"data:{attachment.content_type};base64,{base64.b64encode(attachment.read()).decode()}"


def _selected(conversation: Conversation) -> list[Message]:
    """The selected path (what the thread shows), without an answer still streaming."""
    return [m for m in branches.thread(conversation) if m.status != Message.STREAMING]


def export_json(conversation: Conversation) -> dict:
    """The conversation as a JSON-ready dict (reads the attachments: call from a thread)."""
    messages = []
    for message in _selected(conversation):
        item: dict = {"role": message.role}
        attachments = list(message.attachments.all())
        if attachments:
            parts = [{"type": "text", "text": message.content}]
            for a in attachments:
                part = "image_url" if a.kind in ("image", "pdf") else f"{a.kind}_url"
                parts.append({"type": part, part: {"url": _data_uri(a)}, "name": a.name})
            item["content"] = parts
        else:
            item["content"] = message.content
        if message.reasoning:
            item["reasoning_content"] = message.reasoning
        if message.tool_calls:
            item["tool_calls"] = message.tool_calls
        if message.tool_call_id:
            item["tool_call_id"] = message.tool_call_id
        if message.role == "assistant":
            extra = {"model": message.model_id, "status": message.status, "params": message.params}
            extra["usage"], extra["finish_reason"] = message.usage, message.finish_reason
            if message.choices:
                extra["branches"] = message.choices
            item["playground"] = {k: v for k, v in extra.items() if v not in (None, "", {}, [])}
        messages.append(item)
    return {
        "format": FORMAT,
        "version": VERSION,
        "title": conversation.display_title,
        "system_prompt": conversation.system_prompt,
        "model": conversation.model_id,
        "params": conversation.params,
        "context_policy": conversation.context_policy,
        "messages": messages,
    }


def export_markdown(conversation: Conversation) -> str:
    lines = [f"# {conversation.display_title}", "", f"- Model: `{conversation.model_id or 'default'}`"]
    lines += [f"- {name}: `{json.dumps(value)}`" for name, value in conversation.params.items()]
    if conversation.system_prompt:
        lines += ["", "## System", "", conversation.system_prompt]
    for message in _selected(conversation):
        heading = {"user": "User", "assistant": "Assistant", "tool": "Tool", "system": "System"}[message.role]
        if message.role == "assistant" and message.model_id:
            heading += f" · {message.model_id}"
        lines += ["", f"## {heading}", ""]
        if message.reasoning:
            lines += ["<details><summary>Thinking</summary>", "", message.reasoning, "", "</details>", ""]
        lines.append(message.content)
        lines += [f"- Attachment: {a.name} ({a.content_type}, {human_size(a.size)})" for a in message.attachments.all()]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- import


@dataclass
class ImportedFile:
    kind: str
    content_type: str
    name: str
    data: bytes


@dataclass
class ImportedMessage:
    role: str
    content: str
    reasoning: str = ""
    tool_calls: list | None = None
    tool_call_id: str = ""
    model_id: str = ""
    status: str = Message.COMPLETE
    params: dict = field(default_factory=dict)
    usage: dict | None = None
    finish_reason: str = ""
    choices: list = field(default_factory=list)
    files: list[ImportedFile] = field(default_factory=list)


@dataclass
class Imported:
    title: str = ""
    system_prompt: str = ""
    model: str = ""
    params: dict = field(default_factory=dict)
    context_policy: str = "latest"
    messages: list[ImportedMessage] = field(default_factory=list)


def parse(raw: bytes | str) -> Imported:
    """Read an export of ours, or a bare OpenAI messages array (or an object with `messages`)."""
    size = len(raw.encode() if isinstance(raw, str) else raw)
    if size > MAX_IMPORT_BYTES:
        raise ImportError_(f"file: {human_size(size)} is over the limit of {MAX_IMPORT_MB} MB.")
    try:
        data = inputs.loads(raw)
    except UnicodeDecodeError:
        raise ImportError_("file: not UTF-8 text; export a conversation as JSON and import that file.") from None
    except json.JSONDecodeError as error:
        raise ImportError_(f"line {error.lineno}, column {error.colno}: not valid JSON ({error.msg}).") from None
    except inputs.InputError as error:
        raise ImportError_(f"{error}.") from None
    if isinstance(data, list):
        data = {"messages": data}
    if not isinstance(data, dict):
        raise ImportError_("file: expected a JSON object with messages, or an array of messages.")
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ImportError_("messages: expected a non-empty array of messages.")
    if len(messages) > MAX_MESSAGES:
        raise ImportError_(f"messages: {len(messages)} messages; the limit is {MAX_MESSAGES}.")
    result = Imported(
        title=_text(data, "title", 200),
        system_prompt=_text(data, "system_prompt", MAX_TEXT),
        model=_text(data, "model", 200),
        params=_params(data.get("params"), "params"),
        context_policy=data.get("context_policy") if data.get("context_policy") == "first_and_latest" else "latest",
    )
    for index, item in enumerate(messages):
        message = _message(item, f"messages[{index}]")
        # A leading system message (a pasted OpenAI array) becomes the system prompt.
        if message.role == "system" and not result.messages and not result.system_prompt:
            result.system_prompt = message.content
            continue
        result.messages.append(message)
    if not result.messages:
        raise ImportError_("messages: nothing but a system prompt; add at least one user message.")
    return result


def _text(data: dict, name: str, limit: int, where: str = "") -> str:
    value = data.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ImportError_(f"{where}{name}: expected a string.")
    if len(value) > limit:
        raise ImportError_(f"{where}{name}: {len(value)} characters; the limit is {limit}.")
    return value


def _params(value, where: str) -> dict:
    """Parameters as the panel would save them; one the panel would refuse is refused here, naming it."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ImportError_(f"{where}: expected an object of parameters.")
    params, errors = imported_params(value)
    if errors:
        raise ImportError_(f"{where}.{errors[0]}")
    return params


def _tool_calls(calls, where: str) -> list | None:
    """Tool calls in the shape the chat sends and shows them: an id, a function name and its arguments as text."""
    if calls is None:
        return None
    if not isinstance(calls, list):
        raise ImportError_(f"{where}: expected an array.")
    for index, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        texts = isinstance(function, dict) and all(
            isinstance(value, str) for value in (call.get("id"), function.get("name"), function.get("arguments", ""))
        )
        if not texts:
            raise ImportError_(
                f'{where}[{index}]: expected {{"id": "…", "type": "function", "function": {{"name": "…", '
                f'"arguments": "…"}}}} with text values.'
            )
    return calls


def _message(item, where: str) -> ImportedMessage:
    if not isinstance(item, dict):
        raise ImportError_(f"{where}: expected an object with role and content.")
    role = item.get("role")
    if role not in ROLES:
        raise ImportError_(f"{where}.role: must be one of {', '.join(ROLES)} (got {json.dumps(role)[:40]}).")
    content = item.get("content")
    files: list[ImportedFile] = []
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text, files = _parts(content, f"{where}.content")
    else:
        raise ImportError_(f"{where}.content: expected a string or an array of content parts.")
    if len(text) > MAX_TEXT:
        raise ImportError_(f"{where}.content: {len(text)} characters; the limit is {MAX_TEXT}.")
    extra = item.get("playground") if isinstance(item.get("playground"), dict) else {}
    branches = extra.get("branches") or []
    if not isinstance(branches, list) or not all(isinstance(b, str) for b in branches):
        raise ImportError_(f"{where}.playground.branches: expected an array of strings.")
    tool_calls = _tool_calls(item.get("tool_calls"), f"{where}.tool_calls")
    status = extra.get("status")
    return ImportedMessage(
        role=role,
        content=text,
        reasoning=_text(item, "reasoning_content", MAX_TEXT, f"{where}."),
        tool_calls=tool_calls,
        tool_call_id=str(item.get("tool_call_id") or "")[:200],
        model_id=str(extra.get("model") or "")[:200],
        status=status if status in dict(Message.STATUSES) and status != Message.STREAMING else Message.COMPLETE,
        params=extra.get("params") if isinstance(extra.get("params"), dict) else {},
        usage=extra.get("usage") if isinstance(extra.get("usage"), dict) else None,
        finish_reason=str(extra.get("finish_reason") or "")[:32],
        choices=branches,
        files=files,
    )


def _parts(parts: list, where: str) -> tuple[str, list[ImportedFile]]:
    texts, files = [], []
    for index, part in enumerate(parts):
        here = f"{where}[{index}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            texts.append(str(part.get("text") or ""))
        elif kind in PARTS:
            url = (part.get(kind) or {}).get("url") if isinstance(part.get(kind), dict) else None
            files.append(_file(url, PARTS[kind], str(part.get("name") or f"attachment-{index}"), here))
        else:
            raise ImportError_(f"{here}.type: must be text, image_url, audio_url or video_url.")
    if len(files) > 5:
        raise ImportError_(f"{where}: {len(files)} attachments; the limit is 5 per message.")
    return "\n".join(texts), files


def _file(url, kind: str, name: str, where: str) -> ImportedFile:
    match = DATA_URI.match(url or "") if isinstance(url, str) else None
    if match is None:
        raise ImportError_(f"{where}: expected a base64 data URI (links to other addresses are not fetched).")
    content_type = match.group(1).lower()
    if content_type == "application/pdf":
        kind = "pdf"
    if content_type not in ACCEPTED_TYPES.get(kind, {}):
        raise ImportError_(f"{where}: {content_type} is not an accepted {kind} type.")
    try:
        data = base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        raise ImportError_(f"{where}: the data URI is not valid base64.") from None
    if len(data) > MAX_ATTACHMENT_BYTES:
        raise ImportError_(f"{where}: {human_size(len(data))}; the limit is {human_size(MAX_ATTACHMENT_BYTES)}.")
    return ImportedFile(kind=kind, content_type=content_type, name=name[:255], data=data)


def create(imported: Imported, owner, connection) -> Conversation:
    """The imported conversation, with its files, in the owner's account (one transaction)."""
    storage = Attachment._meta.get_field("file").storage
    stored: list[str] = []
    try:
        return _create(imported, owner, connection, storage, stored)
    except BaseException:
        for name in stored:  # nothing half-made: the files of rows that were not saved go too
            storage.delete(name)
        raise


def _create(imported: Imported, owner, connection, storage, stored: list[str]) -> Conversation:
    with transaction.atomic():
        conversation = Conversation.objects.create(
            owner=owner,
            title=imported.title or "Imported conversation",
            system_prompt=imported.system_prompt,
            connection=connection,
            model_id=imported.model,
            params=imported.params,
            context_policy=imported.context_policy,
        )
        parent = None  # a linear thread: each message follows the one before
        for item in imported.messages:
            message = Message.objects.create(
                conversation=conversation,
                parent_id=parent,
                role=item.role,
                content=item.content,
                reasoning=item.reasoning,
                tool_calls=item.tool_calls,
                tool_call_id=item.tool_call_id,
                model_id=item.model_id,
                status=item.status,
                params=item.params,
                usage=item.usage,
                finish_reason=item.finish_reason,
                choices=item.choices,
            )
            parent = message.pk
            for f in item.files:
                name = storage.save(attachment_name(owner.pk, f.name), ContentFile(f.data))
                stored.append(name)
                Attachment.objects.create(
                    message=message, file=name, kind=f.kind, content_type=f.content_type, name=f.name, size=len(f.data)
                )
        if not imported.title:
            first = next((m.content for m in imported.messages if m.role == "user"), "")
            conversation.title = ""
            conversation.title_from(first)
            conversation.save(update_fields=["title"])
    return conversation
