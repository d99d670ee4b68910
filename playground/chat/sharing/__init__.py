"""A conversation as a kind of share: its frozen thread, its live view, its fork, its code and its exports."""

import json

from django.core.files.base import File
from django.urls import path, reverse
from django.utils.text import slugify

from playground.catalog.params import set_params
from playground.chat import branches
from playground.chat import services as chat_services
from playground.chat.models import Attachment, Conversation, Message, attachment_name, get_conversation
from playground.chat.sharing import transfer
from playground.chat.sharing.snippets import chat as chat_snippets
from playground.lib import files as stored_files
from playground.lib.markdown.rendering import render_markdown
from playground.sharing.kinds import Kind

MESSAGE_FIELDS = [
    "role",
    "content",
    "reasoning",
    "status",
    "model_id",
    "params",
    "usage",
    "finish_reason",
    "trace_id",
    "ttft_ms",
    "total_ms",
    "choices",
    "tool_calls",
    "tool_call_id",
]


class ConversationKind(Kind):
    name, label, plural = "conversation", "Conversation", "Conversations"
    model, template = "chat.Conversation", "chat/sharing/shared.html"
    fork_words = ", every message and file included,"
    live = True  # a team link to a conversation is always live: the library stays current

    def get(self, request, pk):
        return get_conversation(request, pk)

    def title(self, item) -> str:
        return item.display_title

    def url(self, item) -> str:
        return reverse("chat:conversation", args=[item.pk])

    def freeze(self, item, files):
        return conversation_content(item, files)

    def describe(self, content):
        count = len(content.get("messages") or [])
        return f"A conversation with {content.get('model_id') or 'a model'}, {count} message{'s' * (count != 1)}."

    def show(self, share, content, request):
        if share.live:
            # A live link shows the conversation as it is now; files added after the last update are not served.
            conversation = share.source
            share.title = share.title if share.titled else conversation.display_title
            content = {**content, "messages": conversation_messages(conversation)}
            content["last_message"] = content["messages"][-1]["id"] if content["messages"] else 0
        content["params"] = set_params(content["params"])
        frozen = set(share.files.values_list("key", flat=True))
        for message in content["messages"]:
            decorate(message, frozen)
        return content

    def model_of(self, content):
        return content["model_id"]

    def fork(self, share, user, connection, offered):
        copy = fork_conversation(share, user, connection, self.model_of(share.content) if offered else "")
        return reverse("chat:conversation", args=[copy.pk])

    def code(self, item, base_url):
        chat_request = chat_services.preview_request(item, "Your next message")
        notes = [f"Left out of the request, not valid: {error}" for error in chat_request.errors]
        if any(m.attachments.all() for m in item.messages.all()):
            notes.append("Attachments are shortened here: put each file's whole base64 data in its data URI.")
        if chat_request.left_out:  # never silently: the code sends what the playground would, and says what not
            total = chat_request.total_messages
            words = chat_services.left_out_words(chat_request.left_out, total, item.context_policy, with_next=True)
            notes.append(words)
        return chat_snippets(base_url, chat_request.body), notes

    def connection(self, item):
        return chat_services.connection_for(item)

    def export(self, item, fmt):
        if fmt == "json":
            return json.dumps(transfer.export_json(item), ensure_ascii=False, indent=2), "application/json"
        if fmt == "md":
            return transfer.export_markdown(item), "text/markdown"
        return None

    def filename(self, item) -> str:
        return slugify(item.display_title)[:60] or f"conversation-{item.pk}"

    def urls(self) -> list:
        from playground.chat.sharing import views as share_views
        from playground.sharing import views

        return [
            path("shared/watching/<int:pk>/", share_views.watchers, name="watching"),
            path("export/<int:pk>.<str:fmt>", views.export, {"kind": self.name}, name="export"),
            path("import/", share_views.import_conversation, name="import"),
        ]


def decorate(message: dict, frozen: set) -> dict:
    """A frozen message as the share page renders it: its files marked shared, its request as JSON, its HTML."""
    for item in message["attachments"]:
        item["shared"] = item["key"] in frozen
    if message.get("request") is not None:
        message["request_json"] = json.dumps(message["request"], indent=2, ensure_ascii=False)
    if message["role"] == "assistant":
        message["html"] = render_markdown(message["content"])
    return message


# ---------------------------------------------------------------- freezing


def message_dict(message: Message) -> dict:
    data = {name: getattr(message, name) for name in MESSAGE_FIELDS}
    data["id"] = message.pk
    data["created"] = message.created.isoformat() if message.created else ""
    data["attachments"] = [
        {"key": f"attachment-{a.pk}", "name": a.name, "kind": a.kind, "content_type": a.content_type, "size": a.size}
        for a in message.attachments.all()
    ]
    return data


def turn_request(conversation: Conversation, earlier: list[dict], answer: dict) -> tuple[dict, str]:
    """The request body behind an answer: its model and parameters, the system prompt and the turns before it,
    kept by the conversation's context policy, and what it left out in words ("" when nothing). Attachments appear
    as references to the shared files."""
    turns = [
        (m["role"], m["content"], m["attachments"])
        for m in earlier
        if m["role"] in ("user", "system")
        or (m["role"] == "assistant" and m["content"] and m["status"] not in (Message.ERROR, Message.STREAMING))
    ]
    system = conversation.system_prompt.strip()
    kept = chat_services.apply_policy(turns, conversation.context_policy, chat_services.MAX_MESSAGES - bool(system))
    messages = [{"role": "system", "content": system}] if system else []
    for role, text, attachments in kept:
        if not attachments:
            messages.append({"role": role, "content": text})
            continue
        parts = [{"type": "text", "text": text}]
        for item in attachments:
            part = chat_services.PART_TYPES.get(item["kind"], "image_url")
            parts.append({"type": part, part: {"url": f"data:{item['content_type']};base64,… ({item['name']})"}})
        messages.append({"role": role, "content": parts})
    body = {"model": answer["model_id"] or conversation.model_id, "messages": messages, **(answer["params"] or {})}
    left = chat_services.turns_left_out(turns, kept)
    return body, chat_services.left_out_words(left, len(turns), conversation.context_policy) if left else ""


def conversation_messages(conversation: Conversation, messages=None) -> list[dict]:
    """Every message with its attachments (two queries), each answer with the request that produced it."""
    if messages is None:
        messages = branches.thread(conversation)
    rows = [message_dict(m) for m in messages]
    for index, row in enumerate(rows):
        if row["role"] == "assistant":
            row["request"], row["request_note"] = turn_request(conversation, rows[:index], row)
    return rows


def conversation_content(conversation: Conversation, files: list) -> dict:
    # The selected path only (what the owner's thread shows), without an answer still streaming: a frozen copy
    # would show it "generating" forever.
    rows = [m for m in branches.thread(conversation) if m.status != Message.STREAMING]
    messages = conversation_messages(conversation, rows)
    for message in rows:
        for a in message.attachments.all():
            files.append((f"attachment-{a.pk}", a.file.name, a.name, a.content_type))
    return {
        "title": conversation.display_title,
        "model_id": conversation.model_id,
        "system_prompt": conversation.system_prompt,
        "params": conversation.params,
        "context_policy": conversation.context_policy,
        "messages": messages,
        "last_message": messages[-1]["id"] if messages else 0,
    }


# ---------------------------------------------------------------- forking


def fork_conversation(share, user, connection, model_id: str) -> Conversation:
    content = share.content
    frozen = {f.key: f for f in share.files.all()}
    conversation = Conversation.objects.create(
        owner=user,
        title=f"{content['title']} (fork)"[:200],
        system_prompt=content["system_prompt"],
        connection=connection,
        model_id=model_id,
        params=content["params"],
        context_policy=content["context_policy"],
    )
    storage = Attachment._meta.get_field("file").storage
    parent = None  # the frozen path, linear: each message follows the one before
    for data in content["messages"]:
        if data["status"] == Message.STREAMING:
            continue
        fields = {name: data[name] for name in MESSAGE_FIELDS}
        message = Message.objects.create(conversation=conversation, parent_id=parent, **fields)
        parent = message.pk
        for item in data["attachments"]:
            source = frozen.get(item["key"])
            if source is None or stored_files.size(source.file) is None:
                continue
            with stored_files.open_stream(source.file) as handle:
                name = storage.save(attachment_name(user.pk, item["name"]), File(handle))
            Attachment.objects.create(
                message=message,
                file=name,
                kind=item["kind"],
                content_type=item["content_type"],
                name=item["name"],
                size=item["size"],
            )
    return conversation
