"""What the chat page needs around its forms: the start page's picker (the last used connection and model), the
files of a message with their options, the check that no tool call waits before a typed message, and the
conversations whose tools the Tools tab can copy."""

from django.core.exceptions import ValidationError

from playground.chat import services
from playground.chat.forms import (
    ChatModelPicker,
    accept_attribute,
    apply_attachment_options,
    chat_params_form,
    clean_attachments,
)
from playground.chat.models import Conversation
from playground.connections import models as connections


def tool_sources(user, conversation) -> list[Conversation]:
    """The user's other conversations with tool definitions to copy (the latest 50)."""
    rows = Conversation.objects.for_user(user).filter(params__has_key="tools").only("title", "params")
    if conversation is not None and conversation.pk:
        rows = rows.exclude(pk=conversation.pk)
    return [row for row in rows[:50] if row.params.get("tools")]


def last_used(user) -> tuple[int | None, str]:
    """The connection and model of the user's latest conversation: a new chat starts with them (without one, the
    picker starts on the user's own connection before a team's)."""
    latest = connections.last_used(Conversation.objects.for_user(user).exclude(model_id=""))
    return (latest.connection_id, latest.model_id) if latest else (None, "")


def start_picker(request, connection_id=None, model_id=None, *, connections=None) -> dict:
    """The start page's picker: the last used connection and model (or those posted), and the files that model
    accepts. `connections`: the user's, when the caller has read them."""
    if connection_id is None and not model_id:
        connection_id, model_id = last_used(request.user)
    initial = {"connection": connection_id, "model": model_id}
    picker = ChatModelPicker(user=request.user, initial=initial, connections=connections)
    params = chat_params_form(picker.chosen_model, request.POST if request.method == "POST" else None)
    return {"picker": picker, "accept": accept_attribute(picker.chosen_model), "params": params}


def uploads_of(files: list, options: str, conversation, composer) -> list:
    """The files posted with a message, with their per-file options (`attachment_options`); errors go on the
    composer."""
    if not files:
        return []
    try:
        uploads = clean_attachments(files, services.selected_model(conversation))
        return apply_attachment_options(uploads, options)
    except ValidationError as exc:
        for message in exc.messages:
            composer.add_error(None, message)
    return []


def waiting_tools(conversation, rows=None) -> str | None:
    """Why a typed message cannot go yet: the last answer's tool calls wait for their results."""
    _, calls = services.pending_calls(conversation, rows)
    if not calls:
        return None
    names = ", ".join(f"{call['function']['name']} ({call['id']})" for call in calls)
    return (
        f"The last answer called {names}: write the result{'s' if len(calls) > 1 else ''} in the tool call "
        f"cards above and press Send result{'s' if len(calls) > 1 else ''} before sending a new message."
    )
