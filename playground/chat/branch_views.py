"""Thin htmx views over the branch and compare commands (commands.operate): each answers with the re-rendered
thread (its selected path). Refused input is a 400 whose text names the field and the limit."""

import json

from asgiref.sync import sync_to_async
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.views.decorators.http import require_POST

from playground.chat import branches, commands

TEXT = "text/plain; charset=utf-8"


def _thread_html(request, conversation) -> str:
    context = {"conversation": conversation, "thread": branches.thread(conversation), "has_connection": True}
    return render_to_string("chat/index.html#thread", context, request=request)


async def _run(request, pk, name: str, mid=None, **path) -> HttpResponse:
    path = {"message_id": mid, **path}  # the arguments the address holds; the others are posted
    args = commands.arguments(name, lambda key: path[key] if key in path else request.POST.get(key))
    files = request.FILES.getlist("attachments") if name == "compare" else ()
    outcome = await commands.operate(
        name,
        await request.auser(),
        pk,
        args,
        tab=request.headers.get("X-Chat-Tab", ""),
        files=files,
        options=request.POST.get("attachment_options", ""),
    )
    if outcome.status == 404:  # anyone else's conversation or message (the command's one check)
        raise Http404(outcome.errors[0])
    if not outcome.sent:
        return HttpResponse(outcome.errors[0], status=outcome.status, content_type=TEXT)
    if not request.htmx:
        return redirect("chat:conversation", pk=pk)
    response = HttpResponse(await sync_to_async(_thread_html)(request, outcome.conversation))
    if outcome.notice:
        response["HX-Trigger"] = json.dumps({"chat:notice": {"text": outcome.notice}})
    return response


@require_POST
async def edit(request, pk, mid):
    return await _run(request, pk, "edit", mid)


@require_POST
async def regenerate(request, pk, mid):
    return await _run(request, pk, "regenerate", mid)


@require_POST
async def switch(request, pk, mid):
    return await _run(request, pk, "switch", mid)


@require_POST
async def delete_message(request, pk, mid):
    return await _run(request, pk, "delete", mid)


@require_POST
async def insert(request, pk):
    return await _run(request, pk, "insert")


@require_POST
async def compare(request, pk):
    return await _run(request, pk, "compare")


@require_POST
async def pick(request, pk, mid):
    return await _run(request, pk, "pick", mid)


@require_POST
async def choose(request, pk, mid, number):
    """n > 1: continue with choice `number` of answer `mid`."""
    return await _run(request, pk, "choose", mid, number=number)
