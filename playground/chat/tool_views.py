"""Thin views of tool round trips, the tools editor's copy, and the start page's model picker."""

from asgiref.sync import sync_to_async
from django.db import DatabaseError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_POST

from playground import inputs
from playground.chat import services
from playground.chat.forms import ChatModelPicker, accept_attribute, chat_params_form
from playground.chat.models import Conversation, Message, get_conversation
from playground.chat.panel_views import PanelProblems, connections_of, panel_response
from playground.chat.views import RETRY_UNAVAILABLE, _live_problem
from playground.connections import gate

RESULT_PREFIX = "result:"


def _results(post) -> dict:
    """The result boxes of a tool-calls form: `result:<call id>` → text."""
    return {key[len(RESULT_PREFIX) :]: value for key, value in post.items() if key.startswith(RESULT_PREFIX)}


def _load(request, pk, mid) -> tuple[Conversation, Message]:
    conversation = get_conversation(request, pk)
    try:
        return conversation, conversation.messages.get(pk=mid, role="assistant")
    except Message.DoesNotExist:
        raise Http404("No such answer.") from None


def _refused(request, message: Message, errors: list[str], results: dict, status: int = 200) -> HttpResponse:
    """The answer again, its boxes holding what was typed, with the errors (htmx swaps only 2xx answers)."""
    message.tool_values = results
    html = render_to_string("chat/_message.html", {"message": message, "tool_errors": errors}, request=request)
    return HttpResponse(html, status=status)


@require_POST
async def tool_results(request, pk, mid):
    """Answer the tool calls of answer `mid` (all of them at once) and continue the turn."""
    conversation, message = await sync_to_async(_load)(request, pk, mid)
    results = _results(request.POST)
    if problem := await _live_problem():
        return await sync_to_async(_refused)(request, message, [RETRY_UNAVAILABLE[problem]], results)
    answer, calls = await sync_to_async(services.pending_calls)(conversation)
    if not calls or answer.pk != message.pk:
        # 200, so htmx shows it: the article comes back as it is now (answered elsewhere, or moved on).
        words = "These tool calls are no longer waiting for results (answered in another tab, or the thread moved on)."
        return await sync_to_async(_refused)(request, message, [words], results)
    try:
        turn = await services.submit_tool_results(conversation, request.user, results)
    except services.ToolResultsError as exc:
        return await sync_to_async(_refused)(request, message, [str(exc)], results)
    except gate.Refused as refusal:
        return await sync_to_async(_refused)(request, message, [refusal.message], results, refusal.status)
    except DatabaseError:
        return await sync_to_async(_refused)(request, message, [RETRY_UNAVAILABLE["database_unavailable"]], results)
    if not request.htmx:
        return redirect("chat:conversation", pk=pk)

    def articles() -> str:
        rows = [Message.objects.get(pk=message.pk)]
        rows += list(conversation.messages.filter(role="tool", pk__gt=message.pk, pk__lt=turn.assistant.pk))
        return "".join(services.render_message(row) for row in rows) + services.render_message(turn.assistant)

    return HttpResponse(await sync_to_async(articles)())


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
