"""The chat page's parameter panel: the connection and model picker, the settings and parameters a conversation
keeps, applied from any POST that carries them (the panel's own, the composer's, a websocket send frame), and the
Request preview."""

import json

from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from playground import inputs
from playground.catalog.params import ParamsForm, params_form
from playground.chat import branches, services
from playground.chat.composing import tool_sources
from playground.chat.forms import (
    ChatModelPicker,
    accept_attribute,
    chat_params_form,
)
from playground.chat.models import CONTEXT_POLICIES, Conversation, get_conversation
from playground.chat.panel import PanelProblems, apply_panel, attach_connection, connections_of
from playground.chat.services import compare as comparisons
from playground.prompts.models import PromptVersion


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
    connections=None,
) -> dict:
    """The parameter panel: the connection, its chat models, the selected model's parameters and the body.

    `connections`: the user's, as `connections_of` read them (the page reads them once for all its parts)."""
    if connections is None:
        connections = connections_of(request.user)  # the Local connection exists before it is offered
    if model_id is None:
        model_id = conversation.model_id if conversation else ""
    picker = _picker(request.user, conversation, connections, connection_id, model_id)
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
        "prompt_versions": compare_versions(request.user),
    }


def _picker(user, conversation, connections, connection_id, model_id) -> ChatModelPicker:
    """The connection and model choice, from what was asked or the conversation's own (kept when its provider no
    longer lists its model)."""
    own = conversation is not None and conversation.pk is not None
    if own:
        attach_connection(conversation, connections)
    return ChatModelPicker(
        user=user,
        initial={
            "connection": connection_id or (conversation.connection_id if conversation else None),
            "model": model_id,
        },
        connections=connections,
        kept=(lambda: services.selected_model(conversation)) if own and conversation.model_id else None,
        kept_on=conversation.connection_id if own else None,
    )


COMPARE_VERSIONS = 50


def compare_versions(user) -> list:
    """The newest library prompt versions the user can use: a compare column may run as one of them."""
    versions = PromptVersion.objects.for_user(user).select_related("prompt", "prompt__team")
    return list(versions.order_by("-created", "-pk")[:COMPARE_VERSIONS])


def compare_forms(model) -> list[ParamsForm]:
    """Each compare column's parameter fields: the panel's own (catalog/params.py), unset, prefixed `c<n>`."""
    forms = []
    for index in range(1, comparisons.MAX_COLUMNS + 1):
        form = params_form(model, comparisons.COLUMN_PARAMS, placeholders=True)
        form.prefix = f"c{index}"
        forms.append(form)
    return forms


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
    problems, _ = apply_panel(request.user, request.POST, conversation)
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
