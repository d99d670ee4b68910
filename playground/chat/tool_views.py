"""Thin views of tool round trips, the tools editor's copy, and the start page's model picker."""

from asgiref.sync import sync_to_async
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_POST

from playground import inputs
from playground.chat import commands, outcomes
from playground.chat.forms import ChatModelPicker, accept_attribute, chat_params_form
from playground.chat.models import Message, get_conversation
from playground.chat.panel import PanelProblems, connections_of
from playground.chat.panel_views import panel_response


def _refused(request, message: Message, errors: list[str], results: dict, status: int = 200) -> HttpResponse:
    """The answer again, its boxes holding what was typed, with the errors (htmx swaps only 2xx answers)."""
    message.tool_values = results
    html = render_to_string("chat/_message.html", {"message": message, "tool_errors": errors}, request=request)
    return HttpResponse(html, status=status)


@require_POST
async def tool_results(request, pk, mid):
    """Answer the tool calls of answer `mid` (all of them at once) and continue the turn."""
    results = commands.results_of(request.POST)
    outcome = await commands.tool_results(await request.auser(), pk, mid, results)
    if outcome.status == 404:  # anyone else's conversation or answer (the command's one check)
        raise Http404(outcome.errors[0])
    if not outcome.sent:
        if outcome.message is None:  # the database is down: no article to show again
            return HttpResponse(outcome.errors[0], status=outcome.status, content_type="text/plain; charset=utf-8")
        # 200 unless the gate refused, so htmx shows it: the article comes back as it is now, with the words.
        status = outcome.status if outcome.kind == outcomes.REFUSED else 200
        return await sync_to_async(_refused)(request, outcome.message, outcome.errors, results, status)
    if not request.htmx:
        return redirect("chat:conversation", pk=pk)
    return HttpResponse(outcome.html)


@require_POST
def copy_tools(request, pk):
    """Copy the tool definitions of another of the user's conversations into this one (anyone else's is a 404)."""
    conversation = get_conversation(request, pk)
    source = get_conversation(request, inputs.object_id(request.POST["source"])) if request.POST.get("source") else None
    if source is None or not source.params.get("tools"):
        problems = PanelProblems(tool_errors=["tools: choose a conversation that has tools to copy."])
        return panel_response(request, conversation, problems)
    conversation.params = {**conversation.params, "tools": source.params["tools"]}
    conversation.save(update_fields=["params", "updated"])
    if not request.htmx:
        return redirect("chat:conversation", pk=pk)
    return panel_response(request, conversation, saved=True)


@require_GET
def start_picker(request):
    """The start page's connection and model picker (htmx re-renders it when either changes)."""
    connections_of(request.user)
    picker = ChatModelPicker(
        user=request.user,
        initial={"connection": request.GET.get("connection") or None, "model": request.GET.get("model", "")},
    )
    context = {"picker": picker, "accept": accept_attribute(picker.chosen_model)}
    html = render_to_string("chat/_start_picker.html", context, request)
    # The parameters of the model now picked (out of band), keeping the system prompt typed so far.
    start = {"params": chat_params_form(picker.chosen_model)}
    settings = {"start": start, "oob": True, "system_prompt": request.GET.get("system_prompt", "")}
    html += render_to_string("chat/_start_settings.html", settings, request)
    return HttpResponse(html)
