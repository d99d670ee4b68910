"""The chat page's parameter panel: the connection and model picker, the settings and parameters a conversation
keeps, applied from any POST that carries them (the panel's own, the composer's, a websocket send frame), and the
Request preview."""

import json
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from playground import inputs
from playground.catalog.params import ParamsForm, params_form
from playground.chat import branches, services
from playground.chat.composing import tool_sources
from playground.chat.forms import (
    ChatModelPicker,
    SettingsForm,
    accept_attribute,
    chat_params_form,
    parse_tools,
    stored_values,
)
from playground.chat.models import CONTEXT_POLICIES, Conversation, get_conversation
from playground.chat.services import compare as comparisons
from playground.connections.models import Connection, ensure_local_connection


def connections_of(user) -> list[Connection]:
    connections = list(Connection.objects.for_user(user))
    if not any(c.is_local for c in connections) and (local := ensure_local_connection(user)):
        connections.insert(0, local)
    return connections


def panel_context(
    request,
    conversation,
    thread=(),
    *,
    connection_id=None,
    model_id=None,
    form=None,
    errors=(),
    saved=False,
    tool_errors=(),
    tools_text=None,
) -> dict:
    """The parameter panel: the connection, its chat models, the selected model's parameters and the body."""
    connections_of(request.user)  # the Local connection exists before it is offered
    if model_id is None:
        model_id = conversation.model_id if conversation else ""
    own = conversation is not None and conversation.pk is not None
    picker = ChatModelPicker(
        user=request.user,
        initial={
            "connection": connection_id or (conversation.connection_id if conversation else None),
            "model": model_id,
        },
        kept=services.selected_model(conversation) if own and conversation.model_id else None,
        kept_on=conversation.connection_id if own else None,
    )
    connection, models, model = picker.chosen_connection, picker.models, picker.chosen_model
    if connection is None:
        # No provider at all (the local API is off and none was added): the page says to add a connection.
        return {}
    stored = conversation.params if conversation else {}
    if form is None:
        form = chat_params_form(model, stored=stored)
    draft = conversation or Conversation(owner=request.user)
    chat_request = services.build_request(
        draft, model, list(thread), next_user="…", params=stored, preview=True, connection=connection
    )
    tools = stored.get("tools")
    return {
        "form": form,
        "picker": picker,
        "errors": list(errors),
        "saved": saved,
        "connection": connection,
        "models": models,
        "model": model,
        "model_id": model.model_id if model else model_id,
        "system_prompt": draft.system_prompt,
        "context_policy": draft.context_policy,
        "context_policies": CONTEXT_POLICIES,
        "context_note": chat_request.note,
        "request_preview": json.dumps(chat_request.body, indent=2, ensure_ascii=False),
        "tools": tools_text if tools_text is not None else (json.dumps(tools, indent=2) if tools else ""),
        "tool_errors": list(tool_errors),
        "tool_sources": tool_sources(request.user, conversation) if model and model.tools else [],
        "attach_accept": accept_attribute(model) if conversation else "",
        "compare_forms": compare_forms(model),
    }


def compare_forms(model) -> list[ParamsForm]:
    """Each compare column's parameter fields: the panel's own (catalog/params.py), unset, prefixed `c<n>`."""
    forms = []
    for index in range(1, comparisons.MAX_COLUMNS + 1):
        form = params_form(model, comparisons.COLUMN_PARAMS, placeholders=True)
        form.prefix = f"c{index}"
        forms.append(form)
    return forms


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


def apply_picker(request, conversation: Conversation) -> list[str]:
    """The posted connection and model (what is not posted stays the conversation's); returns the errors.

    Another user's connection is not a choice (it is ignored); a model the connection does not offer is refused.
    """
    connections_of(request.user)
    post = request.POST
    data = {
        "connection": post.get("connection", conversation.connection_id or ""),
        "model": post.get("model", conversation.model_id),
    }
    own = conversation.pk is not None and conversation.model_id
    picker = ChatModelPicker(
        data,
        user=request.user,
        typed=True,
        kept=services.selected_model(conversation) if own else None,
        kept_on=conversation.connection_id,
    )
    picker.is_valid()
    if "connection" in post and picker.cleaned_data.get("connection"):
        conversation.connection = picker.cleaned_data["connection"]
    if "model" in post and "model" in picker.cleaned_data:
        conversation.model_id = picker.cleaned_data["model"]
    return picker.errors.get("model", [])


def apply_panel(request, conversation: Conversation) -> PanelProblems | None:
    """Apply the settings and parameters posted with the form; returns what is invalid, if anything.

    Only the fields present in the POST are changed, so the composer may post the panel along or not.
    """
    post = request.POST
    problems = PanelProblems()
    if "connection" in post or "model" in post:
        problems.errors += apply_picker(request, conversation)
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
    if any(name in post for name in form.fields):
        if form.is_valid():
            params.update(stored_values(form))
        else:
            problems.form = form
    if problems.blocking:
        return problems
    conversation.params = params
    return problems if problems.tool_errors else None


def panel_response(request, conversation, problems: PanelProblems | None = None, *, saved=False) -> HttpResponse:
    thread = branches.thread(conversation) if conversation.pk else []
    problems = problems or PanelProblems()
    panel = panel_context(
        request,
        conversation,
        thread,
        form=problems.form,
        errors=problems.errors,
        saved=saved,
        tool_errors=problems.tool_errors,
        tools_text=problems.tools_text,
    )
    return render(request, "chat/index.html#panel", {"conversation": conversation, "panel": panel})


@require_POST
def settings(request, pk):
    conversation = get_conversation(request, pk)
    problems = apply_panel(request, conversation)
    if problems is None or not problems.blocking:
        conversation.save()
    if request.htmx:
        return panel_response(request, conversation, problems, saved=problems is None)
    return redirect("chat:conversation", pk=conversation.pk)


@require_GET
def panel(request, pk):
    conversation = get_conversation(request, pk)
    connection_id = inputs.object_id(request.GET["connection"]) if request.GET.get("connection") else None
    thread = branches.thread(conversation)
    context = {
        "conversation": conversation,
        "panel": panel_context(
            request, conversation, thread, connection_id=connection_id, model_id=request.GET.get("model")
        ),
    }
    return render(request, "chat/index.html#panel", context)


@require_GET
def request_preview(request, pk):
    conversation = get_conversation(request, pk)
    chat_request = services.preview_request(conversation, request.GET.get("content", ""))
    return JsonResponse(chat_request.body, json_dumps_params={"indent": 2, "ensure_ascii": False})
