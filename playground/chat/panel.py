"""The chat page's parameter panel applied from posted fields (the panel's own form, the composer's POST, a
websocket send frame): the connection and model picker, the settings and the parameters a conversation keeps."""

from dataclasses import dataclass, field

from django.core.exceptions import ValidationError

from playground.catalog.params import ParamsForm
from playground.chat import services
from playground.chat.forms import ChatModelPicker, SettingsForm, chat_params_form, parse_tools, stored_values
from playground.chat.models import Conversation
from playground.connections.models import Connection, ensure_local_connection


def connections_of(user) -> list[Connection]:
    connections = list(Connection.objects.for_user(user))
    if not any(c.is_local for c in connections) and (local := ensure_local_connection(user)):
        connections.insert(0, local)
    return connections


def attach_connection(conversation: Conversation, connections: list[Connection]) -> None:
    """Give the conversation its connection from the user's, already read (the page then reads it no second time);
    one the user may no longer use is left to be read when asked for."""
    if conversation.connection_id is not None and not Conversation.connection.is_cached(conversation):
        found = next((c for c in connections if c.pk == conversation.connection_id), None)
        if found is not None:
            conversation.connection = found


@dataclass
class PanelProblems:
    form: ParamsForm | None = None
    errors: list[str] = field(default_factory=list)
    # Invalid tools JSON does not stop the other settings from saving: the text stays in the editor.
    tool_errors: list[str] = field(default_factory=list)
    tools_text: str | None = None

    @property
    def blocking(self) -> bool:
        return bool(self.form or self.errors)


def apply_picker(user, post, conversation: Conversation) -> list[str]:
    """The posted connection and model (what is not posted stays the conversation's); returns the errors.

    Another user's connection is not a choice (it is ignored); a model the connection does not offer is refused.
    """
    connections_of(user)
    data = {
        "connection": post.get("connection", conversation.connection_id or ""),
        "model": post.get("model", conversation.model_id),
    }
    own = conversation.pk is not None and conversation.model_id
    picker = ChatModelPicker(
        data,
        user=user,
        typed=True,
        kept=(lambda: services.selected_model(conversation)) if own else None,
        kept_on=conversation.connection_id,
    )
    picker.is_valid()
    if "connection" in post and picker.cleaned_data.get("connection"):
        conversation.connection = picker.cleaned_data["connection"]
    if "model" in post and "model" in picker.cleaned_data:
        conversation.model_id = picker.cleaned_data["model"]
    return picker.errors.get("model", [])


def apply_panel(user, post, conversation: Conversation) -> tuple[PanelProblems | None, dict | None]:
    """Apply the settings and parameters posted (a form POST or a socket frame's fields): (what is invalid, if
    anything; the request values of the posted parameters, typed, or None when none were posted).

    Only the fields present are changed, so the composer may post the panel along or not. The values are parsed
    here once and go into the request as they are (they are not read back from the stored JSON).
    """
    problems = PanelProblems()
    if "connection" in post or "model" in post:
        problems.errors += apply_picker(user, post, conversation)
    settings_form = SettingsForm(post)
    settings_form.is_valid()
    cleaned = settings_form.cleaned_data
    if "system_prompt" in post and "system_prompt" in cleaned:
        conversation.system_prompt = cleaned["system_prompt"]
    if "context_policy" in post and cleaned.get("context_policy"):
        conversation.context_policy = cleaned["context_policy"]
    model = services.selected_model(conversation)
    params = dict(conversation.params)
    if "tools" in post:
        try:
            params["tools"] = parse_tools(post["tools"])
        except ValidationError as exc:
            problems.tool_errors.extend(exc.messages)
            problems.tools_text = post["tools"]
    form = chat_params_form(model, post)
    values = None
    if any(name in post for name in form.fields):
        if form.is_valid():
            params.update(stored_values(form))
            values = form.request_values()
        else:
            problems.form = form
    if problems.blocking:
        return problems, None
    conversation.params = params
    return (problems if problems.tool_errors else None), values
