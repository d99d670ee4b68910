"""Thin htmx views over the branch and compare services: each posts to one service function and answers with the
re-rendered thread (its selected path). Refused input is a 400 whose text names the field and the limit."""

import json

from asgiref.sync import sync_to_async
from django.http import HttpResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.views.decorators.http import require_POST

from playground.chat import branches
from playground.chat.models import get_conversation
from playground.chat.services import branches as operations
from playground.chat.services import compare as comparisons
from playground.chat.services.limits import TooBusy
from playground.chat.services.turns import LiveUnavailable, check_live
from playground.connections import gate


def _thread_html(request, conversation) -> str:
    context = {"conversation": conversation, "thread": branches.thread(conversation), "has_connection": True}
    return render_to_string("chat/index.html#thread", context, request=request)


async def _run(request, pk, operation, args: dict, *, live: bool = False) -> HttpResponse:
    conversation = await sync_to_async(get_conversation)(request, pk)
    user = await request.auser()
    try:
        if live:
            await check_live()
        await operation(conversation, user, args)
    except (operations.Refused, TooBusy) as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    except gate.Refused as refusal:
        return HttpResponse(refusal.message, status=refusal.status, content_type="text/plain; charset=utf-8")
    except LiveUnavailable:
        return HttpResponse(
            "The live channel (Redis) cannot be reached; nothing changed. Try again in a moment.", status=503
        )
    await operations.announce(conversation, request.headers.get("X-Chat-Tab", ""))
    if not request.htmx:
        return redirect("chat:conversation", pk=pk)
    return HttpResponse(await sync_to_async(_thread_html)(request, conversation))


@require_POST
async def edit(request, pk, mid):
    args = {"message_id": mid, "content": request.POST.get("content", "")}
    return await _run(request, pk, operations.edit, args, live=True)


@require_POST
async def regenerate(request, pk, mid):
    return await _run(request, pk, operations.regenerate, {"message_id": mid}, live=True)


@require_POST
async def switch(request, pk, mid):
    return await _run(request, pk, operations.switch, {"message_id": mid})


@require_POST
async def delete_message(request, pk, mid):
    return await _run(request, pk, operations.delete, {"message_id": mid})


@require_POST
async def insert(request, pk):
    post = request.POST
    args = {"after": post.get("after", ""), "role": post.get("role", ""), "content": post.get("content", "")}
    return await _run(request, pk, operations.insert, args)


@require_POST
async def compare(request, pk):
    post = request.POST
    columns = [
        {
            "model": post.get(f"model_{i}", ""),
            "params": post.get(f"params_{i}", ""),
            "fields": comparisons.fields_of(post.get, i),
        }
        for i in range(1, comparisons.MAX_COLUMNS + 1)
        if post.get(f"model_{i}", "").strip()
    ]
    args = {"content": post.get("content", ""), "columns": columns}
    files = request.FILES.getlist("attachments")
    notes = []

    async def start(conversation, user, args):
        # The composer's files come only by this POST (a socket frame carries text): checked, then sent to each
        # column whose model takes them; the response says which columns do not get them.
        args["attachments"] = await sync_to_async(comparisons.clean_uploads)(
            conversation, columns, files, post.get("attachment_options", "")
        )
        turns = await comparisons.start(conversation, user, args)
        notes.append(comparisons.left_out(turns))
        return turns

    response = await _run(request, pk, start, args, live=True)
    if notes and notes[0] and response.status_code == 200:
        response["HX-Trigger"] = json.dumps({"chat:notice": {"text": notes[0]}})
    return response


@require_POST
async def pick(request, pk, mid):
    return await _run(request, pk, comparisons.pick, {"message_id": mid})
