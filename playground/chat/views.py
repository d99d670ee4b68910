import asyncio

from asgiref.sync import sync_to_async
from django.db import DatabaseError, transaction
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST, require_safe
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget, trigger_client_event

from playground.chat import branches, services
from playground.chat.composing import start_picker, uploads_of, waiting_tools
from playground.chat.forms import (
    ComposerForm,
    RenameForm,
    accept_attribute,
)
from playground.chat.models import Attachment, Conversation, Message, get_conversation
from playground.chat.panel_views import PanelProblems, apply_panel, panel_context, panel_response
from playground.chat.services import Turn
from playground.connections import gate
from playground.lib import downloads, files

LIST_LIMIT = 100


# ---------------------------------------------------------------- page context


def _page(request, conversation=None, **extra) -> dict:
    query = request.GET.get("q", "")
    thread = []
    if conversation is not None:
        services.mark_interrupted(conversation)
        thread = branches.thread(conversation)
    panel = panel_context(request, conversation, thread)
    context = {
        "conversations": Conversation.objects.for_user(request.user).search(query)[:LIST_LIMIT],
        "conversation": conversation,
        "thread": thread,
        "composer": ComposerForm(),
        "panel": panel,
        "attach_accept": panel.get("attach_accept", ""),
        "has_connection": bool(panel),
        "query": query,
    }
    if conversation is None and context["has_connection"]:
        context["start"] = start_picker(request)
        context["attach_accept"] = context["start"]["accept"]
    context.update(extra)
    return context


def _list(request, query: str = "") -> HttpResponse:
    conversations = Conversation.objects.for_user(request.user).search(query)[:LIST_LIMIT]
    return render(request, "chat/index.html#conversation-list", {"conversations": conversations, "query": query})


# ---------------------------------------------------------------- pages and conversation management


@require_GET
def index(request):
    return render(request, "chat/index.html", _page(request))


@require_GET
def conversation(request, pk):
    return render(request, "chat/index.html", _page(request, get_conversation(request, pk)))


@require_GET
def search(request):
    return _list(request, request.GET.get("q", ""))


@require_POST
def rename(request, pk):
    conversation = get_conversation(request, pk)
    form = RenameForm(request.POST)
    if form.is_valid():
        conversation.rename(form.cleaned_data["title"])
    if request.htmx:
        return _list(request)
    return redirect("chat:conversation", pk=conversation.pk)


@require_POST
def duplicate(request, pk):
    copy = get_conversation(request, pk).duplicate()
    url = reverse("chat:conversation", args=[copy.pk])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@require_POST
async def delete(request, pk):
    conversation = await sync_to_async(get_conversation)(request, pk)
    async for message in conversation.messages.filter(status=Message.STREAMING):
        await services.request_stop(message.pk)
    await conversation.adelete()
    url = reverse("chat:index")
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


# ---------------------------------------------------------------- settings and parameters


# ---------------------------------------------------------------- generations


def _invalid(request, conversation, composer, problems) -> HttpResponse:
    """Errors name the field and the limit; nothing is sent. htmx gets the form partial (status 200)."""
    if problems is not None and conversation.pk:
        response = panel_response(request, conversation, problems)
        target = "#panel"
    else:
        errors = list(problems.errors) if problems else []
        if problems and problems.form:
            errors += [e for errs in problems.form.errors.values() for e in errs]
        context = {
            "conversation": conversation if conversation.pk else None,
            "composer": composer or ComposerForm(),
            "send_errors": errors,
            "attach_accept": accept_attribute(services.selected_model(conversation)) if conversation.pk else "",
        }
        if not conversation.pk:
            context["start"] = start_picker(request, request.POST.get("connection"), request.POST.get("model"))
            context["attach_accept"] = context["start"]["accept"]
        response = render(request, "chat/index.html#composer", context)
        target = "#composer"
    if request.htmx:
        response = reswap(retarget(response, target), "outerHTML")
    return response


NO_CONNECTION = "No connection to send to: add a connection (a provider's base URL and API key) first."

UNAVAILABLE = {
    "live_unavailable": (
        "The live channel (Redis) cannot be reached, so nothing was sent or saved. Your message is still here: "
        "try again in a moment; if it persists, the operator should check Redis."
    ),
    "database_unavailable": (
        "The database cannot be reached, so nothing was sent or saved. Your message is still here: try again in "
        "a moment; if it persists, the operator should check the database."
    ),
}


RETRY_UNAVAILABLE = {
    "live_unavailable": "The live channel (Redis) cannot be reached; nothing changed. Try again in a moment.",
    "database_unavailable": "The database cannot be reached; nothing changed. Try again in a moment.",
}


def _unavailable(request, conversation: Conversation | None, kind: str) -> HttpResponse:
    """Nothing was saved: htmx gets the composer back with the words and the typed text; others a JSON error."""
    words = UNAVAILABLE[kind]
    if not request.htmx:
        return JsonResponse({"error": {"type": kind, "message": words}}, status=503)
    try:
        accept = accept_attribute(services.selected_model(conversation)) if conversation and conversation.pk else ""
    except DatabaseError:
        accept = ""
    context = {
        "conversation": conversation if conversation and conversation.pk else None,
        "composer": ComposerForm(request.POST),
        "send_errors": [words],
        "attach_accept": accept,
    }
    response = render(request, "chat/index.html#composer", context)
    return reswap(retarget(response, "#composer"), "outerHTML")


async def _live_problem() -> str | None:
    try:
        await services.check_live()
    except services.LiveUnavailable:
        return "live_unavailable"
    return None


def validate_send(request, conversation, rows=None) -> tuple[ComposerForm, PanelProblems | None, list]:
    """The composer, the panel fields posted along and the attachments of a send (the form POST and the
    websocket's send frame alike): (composer, invalid panel or None, uploads). Valid when the composer is and
    the panel is None. `rows`: the conversation's services.history_rows, when the caller reads them for the
    turn too (one query for both)."""
    composer = ComposerForm(request.POST)
    invalid_params = apply_panel(request, conversation)
    if invalid_params is not None and not invalid_params.blocking:
        invalid_params = None  # invalid tools JSON in the editor: the saved tools stay and the message goes
    uploads = uploads_of(request, conversation, composer) if invalid_params is None else []
    if problem := services.lost_connection(conversation):
        composer.add_error(None, problem)
    elif services.connection_for(conversation) is None:
        composer.add_error(None, NO_CONNECTION)
    elif problem := gate.why_not(services.connection_for(conversation), request.user):
        composer.add_error(None, problem)
    if waiting := waiting_tools(conversation, rows):
        composer.add_error(None, waiting)
    composer.is_valid()
    return composer, invalid_params, uploads


def _prepare_send(request, pk, launch) -> tuple[Turn, str] | HttpResponse:
    """Everything synchronous of a send in one thread hop; the upstream call starts once the body is built."""
    conversation = get_object_or_404(Conversation.objects.for_user(request.user).select_related("connection"), pk=pk)
    rows = services.history_rows(conversation)
    composer, invalid_params, uploads = validate_send(request, conversation, rows)
    if not composer.is_valid() or invalid_params is not None:
        return _invalid(request, conversation, composer, invalid_params)
    try:
        turn = services.prepare_turn(
            conversation, composer.cleaned_data["content"], attachments=uploads, launch=launch, rows=rows
        )
    except gate.Refused as refusal:  # the gate's own check, under its lock (budgets, slots)
        composer.add_error(None, refusal.message)
        return _invalid(request, conversation, composer, invalid_params)
    turn.assistant_html = services.render_message(turn.assistant)
    html = services.render_message(turn.user_message) + turn.assistant_html if request.htmx else ""
    return turn, html


@require_POST
async def send(request, pk):
    if problem := await _live_problem():
        conversation = await sync_to_async(get_conversation)(request, pk)
        return await sync_to_async(_unavailable)(request, conversation, problem)
    launch = services.launcher(asyncio.get_running_loop())
    try:
        outcome = await sync_to_async(_prepare_send)(request, pk, launch)
    except DatabaseError:
        return await sync_to_async(_unavailable)(request, None, "database_unavailable")
    if isinstance(outcome, HttpResponse):
        return outcome
    turn, html = outcome
    await services.start_turn(turn)
    if not request.htmx:
        return redirect("chat:conversation", pk=turn.conversation.pk)
    return trigger_client_event(HttpResponse(html), "conversation-changed", {"id": turn.conversation.pk})


def _create(request):
    """The start page's first message: a conversation is saved only with it (a bare New chat saves nothing)."""
    conversation = Conversation(owner=request.user)
    content = request.POST.get("content", "")
    if not content.strip():
        return None
    invalid_params = apply_panel(request, conversation)
    if invalid_params is not None and not invalid_params.blocking:
        invalid_params = None
    composer = ComposerForm(request.POST)
    if services.connection_for(conversation) is None:
        composer.add_error(None, NO_CONNECTION)
    elif problem := gate.why_not(conversation.connection, request.user):
        composer.add_error(None, problem)
    uploads = uploads_of(request, conversation, composer) if invalid_params is None else []
    if invalid_params is not None or not composer.is_valid():
        return _invalid(request, conversation, composer, invalid_params)
    # One transaction: a failure leaves neither the conversation nor half a turn behind.
    try:
        with transaction.atomic():
            conversation.save()
            return services.prepare_turn(conversation, composer.cleaned_data["content"], attachments=uploads)
    except gate.Refused as refusal:  # nothing was saved
        conversation.pk = None
        composer.add_error(None, refusal.message)
        return _invalid(request, conversation, composer, invalid_params)


@require_POST
async def create(request):
    if request.POST.get("content", "").strip() and (problem := await _live_problem()):
        return await sync_to_async(_unavailable)(request, None, problem)
    try:
        outcome = await sync_to_async(_create)(request)
    except DatabaseError:
        return await sync_to_async(_unavailable)(request, None, "database_unavailable")
    if isinstance(outcome, HttpResponse):
        return outcome
    if outcome is None:
        url = reverse("chat:index")
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    if isinstance(outcome, Turn):
        await services.start_turn(outcome)
        outcome = outcome.conversation
    url = reverse("chat:conversation", args=[outcome.pk])
    if not request.htmx:
        return redirect(url)
    if isinstance(outcome, Conversation) and request.headers.get("X-Chat-Start") == "in-place":
        # The start page becomes the conversation's page in place (static/js/chat/start.js takes its parts and
        # pushes the address): the answer streams on without a reload.
        response = await sync_to_async(lambda: render(request, "chat/index.html", _page(request, outcome)))()
        response["X-Chat-Created"] = url
        return response
    return HttpResponseClientRedirect(url)


def _message(request, pk, mid) -> Message:
    conversation = get_conversation(request, pk)
    try:
        return conversation.messages.select_related("conversation").get(pk=mid)
    except Message.DoesNotExist:
        raise Http404("No such message.") from None


@require_POST
async def stop(request, pk, mid):
    message = await sync_to_async(_message)(request, pk, mid)
    if message.status == Message.STREAMING:
        await services.request_stop(message.pk)
    if request.htmx:
        return HttpResponse(status=204)
    return redirect("chat:conversation", pk=pk)


def _prepare_retry(request, pk, mid) -> Turn | HttpResponse:
    message = _message(request, pk, mid)
    if message.role != "assistant" or message.status not in (Message.ERROR, Message.STOPPED, Message.INTERRUPTED):
        return HttpResponse("Only a failed, stopped or interrupted answer can be retried.", status=409)
    conversation = message.conversation
    if problem := services.lost_connection(conversation):
        return HttpResponse(problem, status=403)
    try:
        return services.prepare_turn(message.conversation, None, replace=message)
    except gate.Refused as refusal:
        return HttpResponse(refusal.message, status=refusal.status)


def _retry_unavailable(request, kind: str) -> HttpResponse:
    if not request.htmx:
        return JsonResponse({"error": {"type": kind, "message": UNAVAILABLE[kind]}}, status=503)
    # The retry button shows the response's text beside itself.
    return HttpResponse(RETRY_UNAVAILABLE[kind], status=503)


@require_POST
async def retry(request, pk, mid):
    """Regenerate an answer. The old one stays until the new one is complete (then the done event names it as
    `replaced`); the response holds both articles, which replace the old one in the page."""
    if problem := await _live_problem():
        await sync_to_async(_message)(request, pk, mid)
        return _retry_unavailable(request, problem)
    try:
        outcome = await sync_to_async(_prepare_retry)(request, pk, mid)
    except DatabaseError:
        return _retry_unavailable(request, "database_unavailable")
    if isinstance(outcome, HttpResponse):
        return outcome
    await services.start_turn(outcome)
    if not request.htmx:
        return redirect("chat:conversation", pk=pk)
    render_message = services.render_message
    return HttpResponse(
        await sync_to_async(lambda: render_message(outcome.replaces) + render_message(outcome.assistant))()
    )


# ---------------------------------------------------------------- attachments


@require_safe
def attachment(request, pk):
    """An attachment of the user's own messages (404 for anyone else's); media inline, anything else downloaded."""
    item = Attachment.objects.filter(pk=pk, message__conversation__owner=request.user).first()
    if item is None or files.size(item.file.name) is None:
        raise Http404("No such attachment.")
    response = downloads.serve_file(
        request,
        lambda: files.open_stream(item.file.name),
        size=item.size,
        content_type=item.content_type,
        filename=item.name,
        inline=item.inline,
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "private, max-age=86400"
    return response
