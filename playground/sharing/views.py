import json

from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.core.files.base import File
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_http_methods, require_POST, require_safe

from playground.batches.models import get_batch
from playground.catalog.models import CatalogModel
from playground.chat import services as chat_services
from playground.chat.models import Attachment, Conversation, Message, attachment_name, get_conversation
from playground.chat.rendering import render_markdown
from playground.connections.models import Connection
from playground.evaluate.models import get_evaluation
from playground.evaluate.views import ROWS_PER_PAGE
from playground.lib import downloads
from playground.rerank.models import RerankRun, get_run
from playground.rerank.services import request_body as rerank_request
from playground.sharing import forks, transfer
from playground.sharing import freeze as freezing
from playground.sharing import snippets as codegen
from playground.sharing.forms import ForkForm, ImportForm, ShareForm
from playground.sharing.models import Share, get_public_share, get_share, tell_viewers, watching
from playground.speech.models import get_clip
from playground.speech.services import request_body as speech_request

SOURCES = {
    Share.CONVERSATION: get_conversation,
    Share.RERANK: get_run,
    Share.SPEECH: get_clip,
    Share.BATCH: get_batch,
    Share.EVALUATION: get_evaluation,
}
# Share pages run under a stricter policy than the rest: nothing but our own scripts, styles, images and media.
SHARE_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "media-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)
FILE_POLICY = "default-src 'none'; sandbox"


def _private(response, policy: str = SHARE_POLICY):
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Referrer-Policy"] = "no-referrer"
    response["Content-Security-Policy"] = policy
    response["Cache-Control"] = "private, no-store"
    return response


def _source(request, kind: str, pk: int):
    if kind not in SOURCES:
        raise Http404("No such kind of share.")
    return SOURCES[kind](request, pk)


def _back(request, fallback: str) -> str:
    target = request.POST.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return target
    return fallback


# ---------------------------------------------------------------- the owner's side


@require_GET
def index(request):
    shares = Share.objects.for_user(request.user)
    return render(request, "sharing/index.html", {"shares": shares})


@require_http_methods(["GET", "POST"])
def source(request, kind: str, pk: int):
    """The links of one conversation, run, clip or batch, and the form that makes a new one."""
    item = _source(request, kind, pk)
    form = ShareForm(request.POST if request.method == "POST" else None, user=request.user)
    error = ""
    if request.method == "POST" and form.is_valid():
        share = Share(owner=request.user, kind=kind, title=freezing.title_of(item)[:200])
        setattr(share, Share.field_for(item), item)
        share.visibility = form.cleaned_data["visibility"]
        share.team = form.cleaned_data["team"]
        share.set_expiry(form.cleaned_data["expiry"])
        # A conversation in the team library stays current: a team link is live.
        share.live = kind == Share.CONVERSATION and (form.cleaned_data["live"] or share.visibility == Share.TEAM)
        try:
            share.save()
            freezing.freeze(share)
        except freezing.NotShareable as exc:
            share.delete()
            error = str(exc)
        else:
            messages.success(request, "Link created. Anyone it is meant for can open it now.")
            return redirect("sharing:source", kind=kind, pk=pk)
    context = {
        "item": item,
        "kind": kind,
        "title": freezing.title_of(item),
        "form": form,
        "error": error,
        "shares": Share.objects.for_user(request.user).for_source(item),
        "back": _source_url(kind, pk),
    }
    return render(request, "sharing/source.html", context)


def _source_url(kind: str, pk: int) -> str:
    return {
        Share.CONVERSATION: reverse("chat:conversation", args=[pk]),
        Share.RERANK: reverse("rerank:detail", args=[pk]),
        Share.SPEECH: reverse("speech:index"),
        Share.BATCH: reverse("batches:index"),
        Share.EVALUATION: reverse("evaluate:detail", args=[pk]),
    }[kind]


@require_POST
def update(request, pk: int):
    """Refresh the frozen content from the source; the URL stays the same."""
    share = get_share(request, pk)
    share.updated = timezone.now()
    try:
        freezing.freeze(share)
    except freezing.NotShareable as exc:
        messages.error(request, str(exc))
    else:
        tell_viewers(share.group, "share.updated")
        messages.success(request, f"“{share.title}” updated: the link shows the content as it is now.")
    return redirect(_back(request, reverse("sharing:index")))


@require_POST
def revoke(request, pk: int):
    share = get_share(request, pk)
    title = share.title
    share.delete()  # live viewers are told by the model's post_delete
    messages.success(request, f"Link to “{title}” revoked: it answers 404 from now on.")
    return redirect(_back(request, reverse("sharing:index")))


@require_GET
def watchers(request, pk: int):
    conversation = get_conversation(request, pk)
    count = watching(conversation.pk)
    context = {"count": count, "conversation": conversation, "poll": True}
    return render(request, "sharing/_watching.html", context)


# ---------------------------------------------------------------- the viewer's side


@login_not_required
@require_GET
def view(request, token: str):
    share = get_public_share(token, request.user)
    share.count_view()
    content = share.content
    frozen = {f.key: f for f in share.files.all()}
    if share.kind == Share.CONVERSATION and share.live:
        # A live link shows the conversation as it is now; files added after the last update are not served.
        conversation = share.conversation
        share.title = conversation.display_title
        content = {**content, "messages": freezing.conversation_messages(conversation)}
        content["last_message"] = content["messages"][-1]["id"] if content["messages"] else 0
    if share.kind == Share.CONVERSATION:
        for message in content["messages"]:
            for item in message["attachments"]:
                item["shared"] = item["key"] in frozen
            if message.get("request") is not None:
                message["request_json"] = json.dumps(message["request"], indent=2, ensure_ascii=False)
            if message["role"] == "assistant":
                message["html"] = render_markdown(message["content"])
    elif share.kind == Share.EVALUATION:
        # Like the evaluation page: one page of rows at a time; the summary covers every row.
        content["page"] = Paginator(content["rows"], ROWS_PER_PAGE).get_page(request.GET.get("page"))
    elif share.kind == Share.BATCH:
        content["requests_json"] = "\n".join(json.dumps(body, ensure_ascii=False) for body in content["requests"])
    elif share.kind in (Share.RERANK, Share.SPEECH):
        runs = [content.get("run"), content.get("compared")] if share.kind == Share.RERANK else [content]
        for run in filter(None, runs):
            run["request_json"] = json.dumps(run["request"], indent=2, ensure_ascii=False)
    context = {
        "share": share,
        "content": content,
        "files": frozen,
        "description": _description(share, content),
        "ws_url": f"/ws/s/{share.token}/" if share.kind == Share.CONVERSATION and share.live else "",
    }
    return _private(render(request, f"sharing/view_{share.kind}.html", context))


def _description(share: Share, content: dict) -> str:
    if share.kind == Share.CONVERSATION:
        count = len(content.get("messages") or [])
        return f"A conversation with {content.get('model_id') or 'a model'}, {count} message{'s' * (count != 1)}."
    if share.kind == Share.RERANK:
        run = content["run"]
        other = f" compared with {content['compared']['model']}" if content.get("compared") else ""
        return f"{run['model']} ranked {len(run['documents'])} documents{other}."
    if share.kind == Share.SPEECH:
        return f"{content['model']} speaking with {content['voice']}: {content['text'][:120]}"
    if share.kind == Share.EVALUATION:
        rows, variants = len(content["rows"]), len(content["variants"])
        return f"An evaluation of {rows} row{'s' * (rows != 1)} × {variants} variant{'s' * (variants != 1)}."
    return f"A batch of {content['total']} requests, {content['status'].replace('_', ' ')}."


@login_not_required
@require_safe
def shared_file(request, token: str, key: str):
    share = get_public_share(token, request.user)
    item = get_object_or_404(share.files, key=key)
    if not item.path.exists():
        raise Http404("The file is gone.")
    inline = item.content_type.split("/")[0] in ("image", "audio", "video")
    response = downloads.serve_file(
        request,
        lambda: item.path.open("rb"),
        size=item.path.stat().st_size,
        content_type=item.content_type,
        filename=item.name,
        inline=inline,
    )
    return _private(response, FILE_POLICY)


@require_http_methods(["GET", "POST"])
def fork(request, token: str):
    """Copy a shared conversation, rerank run, clip or batch into the viewer's account, on a connection of theirs."""
    share = get_public_share(token, request.user)
    if share.kind == Share.EVALUATION:
        raise Http404("An evaluation cannot be forked.")
    connections = list(Connection.objects.for_user(request.user))
    model_id = forks.model_of(share)
    having = [c for c in connections if _offers(c, model_id)]
    initial = {"connection": having[0].pk} if having else {}
    form = ForkForm(request.POST if request.method == "POST" else None, connections=connections, initial=initial)
    if request.method == "POST" and form.is_valid():
        connection = next(c for c in connections if c.pk == form.cleaned_data["connection"])
        if share.kind == Share.CONVERSATION:
            copy = fork_conversation(share, request.user, connection, model_id if connection in having else "")
            target = reverse("chat:conversation", args=[copy.pk])
        elif share.kind == Share.RERANK:
            copy = fork_run(share, request.user, connection)
            target = reverse("rerank:detail", args=[copy.pk])
        elif share.kind == Share.SPEECH:
            copy = forks.fork_clip(share, request.user, connection)
            target = reverse("speech:index")
        else:
            copy = forks.fork_batch(share, request.user, connection)
            target = reverse("batches:results", args=[copy.pk])
        if connection not in having:
            messages.warning(
                request,
                f"{model_id} is not offered by {connection.name}: pick one of its models to continue.",
            )
        else:
            messages.success(request, f"Forked into your account, on {connection.name}.")
        return redirect(target)
    context = {"share": share, "form": form, "model_id": model_id, "having": having, "connections": connections}
    response = _private(render(request, "sharing/fork.html", context))
    # Its form posts here: with "no-referrer" the browser sends `Origin: null` and the CSRF check refuses the fork.
    # Other sites still get no referrer (and so never the token).
    response["Referrer-Policy"] = "same-origin"
    return response


def _offers(connection: Connection, model_id: str) -> bool:
    return CatalogModel.objects.for_connection(connection).filter(model_id=model_id).exists()


def fork_conversation(share: Share, user, connection: Connection, model_id: str) -> Conversation:
    content = share.content
    frozen = {f.key: f for f in share.files.all()}
    conversation = Conversation.objects.create(
        owner=user,
        title=f"{content['title']} (fork)"[:200],
        system_prompt=content["system_prompt"],
        connection=connection,
        model_id=model_id,
        params=content["params"],
        context_policy=content["context_policy"],
    )
    storage = Attachment._meta.get_field("file").storage
    parent = None  # the frozen path, linear: each message follows the one before
    for data in content["messages"]:
        if data["status"] == Message.STREAMING:
            continue
        fields = {name: data[name] for name in freezing.MESSAGE_FIELDS}
        message = Message.objects.create(conversation=conversation, parent_id=parent, **fields)
        parent = message.pk
        for item in data["attachments"]:
            source = frozen.get(item["key"])
            if source is None or not source.path.exists():
                continue
            with source.path.open("rb") as handle:
                name = storage.save(attachment_name(user.pk, item["name"]), File(handle))
            Attachment.objects.create(
                message=message,
                file=name,
                kind=item["kind"],
                content_type=item["content_type"],
                name=item["name"],
                size=item["size"],
            )
    return conversation


def fork_run(share: Share, user, connection: Connection) -> RerankRun:
    run = share.content["run"]
    results = [{"index": row["index"], "relevance_score": row["score"]} for row in run["rows"]]
    return RerankRun.objects.create(
        owner=user,
        connection=connection,
        model=run["model"],
        query=run["query"],
        documents=run["documents"],
        params=run["params"],
        results=results,
        meta={"tokens": run["tokens"], "billed_units": run["billed_units"]},
        trace_id=run["trace_id"],
    )


# ---------------------------------------------------------------- view code


def _base_url(request, connection) -> str:
    """The connection's base URL; the Local one as the absolute address this playground is reached at."""
    if connection is None or connection.is_local:
        return request.build_absolute_uri("/local/v1")
    return connection.base_url


@require_GET
def code(request, kind: str, pk: int):
    if kind == Share.EVALUATION:
        raise Http404("An evaluation has no single request to show as code.")
    item = _source(request, kind, pk)
    notes = []
    connection = getattr(item, "connection", None)
    if kind == Share.CONVERSATION:
        connection = chat_services.connection_for(item)
        chat_request = chat_services.preview_request(item, "Your next message")
        if any(m.attachments.all() for m in item.messages.all()):
            notes.append("Attachments are shortened here: put each file's whole base64 data in its data URI.")
        snippets = codegen.chat(_base_url(request, connection), chat_request.body)
    elif kind == Share.RERANK:
        body = rerank_request(model=item.model, query=item.query, documents=item.documents, params=item.params)
        snippets = codegen.rerank(_base_url(request, item.connection), body)
    elif kind == Share.SPEECH:
        snippets = codegen.speech(_base_url(request, item.connection), speech_request(item))
    else:
        snippets = codegen.batch(
            _base_url(request, item.connection),
            filename=item.input_filename or "requests.jsonl",
            metadata=item.metadata,
            completion_window=str(item.data.get("completion_window") or "24h"),
        )
        notes.append(f"Run it beside {item.input_filename or 'requests.jsonl'} (the batch's input file).")
    context = {"title": freezing.title_of(item), "snippets": snippets, "notes": notes, "back": _source_url(kind, pk)}
    context["api_key"] = _own_local_key(request, connection)
    return render(request, "sharing/code.html", context)


def _own_local_key(request, connection) -> str:
    """The key of the viewer's own Local connection, filled into the code so that it runs as shown (a key of a
    team's or of any other connection is never shown)."""
    if connection is None or not connection.is_local or connection.team_id or connection.owner_id != request.user.pk:
        return ""
    return connection.get_key()


@require_GET
def voice_code(request):
    connections = list(Connection.objects.for_user(request.user))
    chosen = next((c for c in connections if str(c.pk) == request.GET.get("connection")), None)
    connection = chosen or (connections[0] if connections else None)
    model = request.GET.get("model") or "local/tts"
    snippets = codegen.voice_upload(
        _base_url(request, connection), model=model[:200], custom_name="myvoice", text="The words spoken in voice.wav."
    )
    notes = ["Run it beside voice.wav, a short recording of the voice, and put its transcript in text."]
    context = {"title": "Upload a voice", "snippets": snippets, "notes": notes, "back": reverse("speech:voices")}
    return render(request, "sharing/code.html", context)


# ---------------------------------------------------------------- export and import


@require_GET
def export(request, pk: int, fmt: str):
    conversation = get_conversation(request, pk)
    name = slugify(conversation.display_title)[:60] or f"conversation-{pk}"
    if fmt == "json":
        body = json.dumps(transfer.export_json(conversation), ensure_ascii=False, indent=2)
        response = HttpResponse(body, content_type="application/json; charset=utf-8")
    elif fmt == "md":
        response = HttpResponse(transfer.export_markdown(conversation), content_type="text/markdown; charset=utf-8")
    else:
        raise Http404("No such format.")
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


@require_http_methods(["GET", "POST"])
def import_conversation(request):
    form = ImportForm(request.POST if request.method == "POST" else None, request.FILES or None)
    error = ""
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            if upload is not None and upload.size > transfer.MAX_IMPORT_BYTES:
                raise transfer.ImportError_(f"file: over the limit of {transfer.MAX_IMPORT_MB} MB.")
            imported = transfer.parse(upload.read() if upload is not None else form.cleaned_data["text"])
        except transfer.ImportError_ as exc:
            error = str(exc)
        else:
            connections = list(Connection.objects.for_user(request.user))
            having = [c for c in connections if imported.model and _offers(c, imported.model)]
            connection = (having or connections or [None])[0]
            conversation = transfer.create(imported, request.user, connection)
            messages.success(request, f"Imported “{conversation.display_title}”: {len(imported.messages)} messages.")
            return redirect("chat:conversation", pk=conversation.pk)
    return render(request, "sharing/import.html", {"form": form, "error": error})
