from asgiref.sync import sync_to_async
from django.db import DatabaseError
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST, require_safe
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget, trigger_client_event

from playground.chat import branches, commands, outcomes, services
from playground.chat.composing import start_picker
from playground.chat.forms import (
    ComposerForm,
    RenameForm,
    accept_attribute,
)
from playground.chat.models import Attachment, Conversation, Message, get_conversation
from playground.chat.panel import connections_of
from playground.chat.panel_views import panel_context, panel_response
from playground.chat.relay.recovery import mark_interrupted
from playground.lib import downloads, files

LIST_LIMIT = 100


# ---------------------------------------------------------------- page context


def _page(request, conversation=None, **extra) -> dict:
    """The chat page: a conversation's, or the start page (conversation None), which has no panel of its own but
    the start picker and its settings."""
    query = request.GET.get("q", "")
    connections = connections_of(request.user)  # read once: the picker lists them, the conversation has its own
    context = {
        "conversations": Conversation.objects.for_user(request.user).search(query)[:LIST_LIMIT],
        "conversation": conversation,
        "thread": [],
        "composer": ComposerForm(),
        "query": query,
    }
    if conversation is not None:
        context["thread"] = thread = _thread(conversation)
        context["panel"] = panel = panel_context(request, conversation, thread, connections=connections)
        context["attach_accept"] = panel.get("attach_accept", "")
        context["has_connection"] = bool(panel)
    else:
        start = start_picker(request, connections=connections)
        context["has_connection"] = start["picker"].chosen_connection is not None
        if context["has_connection"]:
            context["start"] = start
            context["attach_accept"] = start["accept"]
    context.update(extra)
    return context


def _thread(conversation) -> list:
    """The selected path; an answer shown as streaming whose process died is ended as interrupted first (the sweep
    writes only when the path shows one: a page with nothing streaming costs no write)."""
    thread = branches.thread(conversation)
    if any(message.status == Message.STREAMING for message in _messages(thread)) and mark_interrupted(conversation):
        thread = branches.thread(conversation)
    return thread


def _messages(thread):
    for item in thread:
        yield item
        yield from getattr(item, "columns", ())


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


def _unavailable(request, conversation: Conversation | None, outcome: outcomes.Outcome) -> HttpResponse:
    """Nothing was saved: htmx gets the composer back with the words and the typed text; others a JSON error."""
    if not request.htmx:
        return JsonResponse({"error": {"type": outcome.problem, "message": outcome.errors[0]}}, status=503)
    try:
        accept = accept_attribute(services.selected_model(conversation)) if conversation and conversation.pk else ""
    except DatabaseError:
        accept = ""
    context = {
        "conversation": conversation if conversation and conversation.pk else None,
        "composer": ComposerForm(request.POST),
        "send_errors": outcome.errors,
        "attach_accept": accept,
    }
    response = render(request, "chat/index.html#composer", context)
    if outcome.problem == "draining":
        # A 503 the balancer may send again to another process (deploy/haproxy.cfg: retry-on 503); when none
        # does, the page swaps it in like any refusal (app.js).
        response.status_code = 503
        response["X-Playground-Draining"] = "1"
    return reswap(retarget(response, "#composer"), "outerHTML")


async def _send(request, pk: int | None) -> outcomes.Outcome | HttpResponse:
    """The send command from the POST; its refusals as the page shows them."""
    user = await request.auser()
    outcome = await commands.send(user, pk, request.POST, request.FILES.getlist("attachments"))
    if outcome.kind == outcomes.FAILED:
        # The database is down: no conversation to read; the live channel: still a 404 for anyone else's.
        live = pk is not None and outcome.problem == "live_unavailable"
        conversation = await sync_to_async(get_conversation)(request, pk) if live else None
        return await sync_to_async(_unavailable)(request, conversation, outcome)
    if outcome.status == 404:
        raise Http404(outcome.errors[0])
    if not outcome.sent:
        return await sync_to_async(_invalid)(request, outcome.conversation, outcome.composer, outcome.panel)
    return outcome


@require_POST
async def send(request, pk):
    outcome = await _send(request, pk)
    if isinstance(outcome, HttpResponse):
        return outcome
    if not request.htmx:
        return redirect("chat:conversation", pk=pk)
    return trigger_client_event(HttpResponse(outcome.html), "conversation-changed", {"id": pk})


@require_POST
async def create(request):
    """The start page's first message: a conversation is saved only with it (a bare New chat saves nothing)."""
    if not request.POST.get("content", "").strip():
        url = reverse("chat:index")
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    outcome = await _send(request, None)
    if isinstance(outcome, HttpResponse):
        return outcome
    url = reverse("chat:conversation", args=[outcome.conversation.pk])
    if not request.htmx:
        return redirect(url)
    if request.headers.get("X-Chat-Start") == "in-place":
        # The start page becomes the conversation's page in place (static/js/chat/start.js takes its parts and
        # pushes the address): the answer streams on without a reload.
        conversation = outcome.conversation
        response = await sync_to_async(lambda: render(request, "chat/index.html", _page(request, conversation)))()
        response["X-Chat-Created"] = url
        return response
    return HttpResponseClientRedirect(url)


@require_POST
async def stop(request, pk, mid):
    outcome = await commands.stop(await request.auser(), pk, mid)
    if outcome.status == 404:
        raise Http404(outcome.errors[0])
    if request.htmx:
        return HttpResponse(status=204)
    return redirect("chat:conversation", pk=pk)


@require_POST
async def retry(request, pk, mid):
    """Regenerate an answer. The old one stays until the new one is complete (then the done event names it as
    `replaced`); the response holds both articles, which replace the old one in the page."""
    outcome = await commands.retry(await request.auser(), pk, mid)
    if outcome.kind == outcomes.FAILED:
        if not request.htmx:
            words = outcomes.UNAVAILABLE[outcome.problem]
            return JsonResponse({"error": {"type": outcome.problem, "message": words}}, status=503)
        return HttpResponse(outcome.errors[0], status=503)  # the retry button shows it beside itself
    if outcome.status == 404:
        raise Http404(outcome.errors[0])
    if not outcome.sent:
        return HttpResponse(outcome.errors[0], status=outcome.status)
    if not request.htmx:
        return redirect("chat:conversation", pk=pk)
    return HttpResponse(outcome.html)


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
