import functools

from django.apps import apps
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods, require_POST, require_safe

from playground import inputs
from playground.catalog.models import CatalogModel
from playground.connections.models import Connection, last_used, pick_connection
from playground.lib import downloads, files
from playground.sharing import freeze as freezing
from playground.sharing import kinds, snippets
from playground.sharing.forms import ForkForm, LinkForm, ShareForm
from playground.sharing.models import LinkGone, Share, get_public_share, get_share, tell_viewers

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


def gone_page(view):
    """A link that cannot be opened answers a page in the site's layout: 410 when it expired, else 404."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except LinkGone as gone:
            return _private(gone_response(request, gone.expired, gone.sign_in))

    return wrapper


def gone_response(request, expired: bool, sign_in: str = ""):
    if sign_in:
        who = "the members of a team" if sign_in == Share.TEAM else "the signed-in users of this playground"
        context = {
            "title": "Sign in to open this link",
            "words": f"This link is shared with {who} only.",
            "next_step": "Sign in, and the link opens.",
            "back_url": f"{reverse('accounts:login')}?{urlencode({'next': request.get_full_path()})}",
            "back_label": "Sign in",
        }
        return render(request, "problem.html", context, status=404)
    if expired:
        context = {
            "title": "This link expired",
            "words": "This share link expired: its owner chose how long it would work.",
            "next_step": "Ask whoever sent it for a new link.",
        }
        return render(request, "problem.html", context, status=410)
    context = {
        "title": "Link not found",
        "words": "This share link was revoked by its owner, or it never existed (check that it was copied whole).",
        "next_step": "Ask whoever sent it for a new link.",
    }
    return render(request, "problem.html", context, status=404)


def _private(response, policy: str = SHARE_POLICY):
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Referrer-Policy"] = "no-referrer"
    response["Content-Security-Policy"] = policy
    response["Cache-Control"] = "private, no-store"
    return response


# ---------------------------------------------------------------- the owner's side


@require_GET
def index(request):
    shares = Share.objects.for_user(request.user).listed()
    return render(request, "sharing/index.html", {"shares": shares})


@require_http_methods(["GET", "POST"])
def source(request, kind: str, pk: int):
    """The links of one item of a kind, and the form that makes a new one."""
    declared = kinds.get(kind)
    item = declared.get(request, pk)
    form = ShareForm(request.POST if request.method == "POST" else None, user=request.user)
    error = ""
    if request.method == "POST" and form.is_valid():
        share = freezing.new_share(request.user, item)
        share.visibility = form.cleaned_data["visibility"]
        share.team = form.cleaned_data["team"]
        share.set_expiry(form.cleaned_data["expiry"])
        # A live kind's item in the team library stays current: a team link is live.
        share.live = declared.live and (form.cleaned_data["live"] or share.visibility == Share.TEAM)
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
        "declared": declared,
        "title": declared.title(item),
        "form": form,
        "error": error,
        "shares": Share.objects.for_user(request.user).for_source(item).listed(),
        "back": declared.url(item),
    }
    return render(request, "sharing/source.html", context)


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
    return HttpResponseRedirect(inputs.next_url(request, reverse("sharing:index")))


@require_http_methods(["GET", "POST"])
def edit(request, pk: int):
    """Change a link's title, visibility, team, expiry and live at the same URL."""
    share = get_share(request, pk)
    initial = {"title": share.title, "visibility": share.visibility, "team": share.team_id, "live": share.live}
    form = LinkForm(request.POST if request.method == "POST" else None, user=request.user, share=share, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        share.titled = share.titled or data["title"] != share.title
        share.title = data["title"]
        share.visibility, share.team = data["visibility"], data["team"]
        share.set_expiry(data["expiry"])
        share.live = share.declared_kind.live and (data["live"] or share.visibility == Share.TEAM)
        share.save(update_fields=["title", "titled", "visibility", "team", "expires", "live"])
        tell_viewers(share.group, "share.changed")  # a viewer the link no longer admits is closed out
        messages.success(request, f"“{share.title}” saved: the link is the same, with its new settings.")
        return HttpResponseRedirect(inputs.next_url(request, reverse("sharing:index")))
    context = {"share": share, "form": form, "declared": share.declared_kind, "next": inputs.next_url(request, "")}
    return render(request, "sharing/edit.html", context)


@require_POST
def revoke(request, pk: int):
    share = get_share(request, pk)
    title = share.title
    share.delete()  # live viewers are told by the model's post_delete
    messages.success(request, f"Link to “{title}” revoked: it answers 404 from now on.")
    return HttpResponseRedirect(inputs.next_url(request, reverse("sharing:index")))


# ---------------------------------------------------------------- the viewer's side


@login_not_required
@require_GET
@gone_page
def view(request, token: str):
    share = get_public_share(token, request.user)
    share.count_view()
    kind = kinds.get(share.kind)
    content = kind.show(share, share.content, request)
    context = {
        "share": share,
        "content": content,
        "files": {f.key: f for f in share.files.all()},
        "description": kind.describe(content),
        "ws_url": f"/ws/s/{share.token}/" if kind.live and share.live else "",
    }
    return _private(render(request, kind.template, context))


@login_not_required
@require_safe
@gone_page
def shared_file(request, token: str, key: str):
    share = get_public_share(token, request.user)
    item = get_object_or_404(share.files, key=key)
    size = files.size(item.file)
    if size is None:
        raise Http404("The file is gone.")
    inline = item.content_type.split("/")[0] in ("image", "audio", "video")
    response = downloads.serve_file(
        request,
        lambda: files.open_stream(item.file),
        size=size,
        content_type=item.content_type,
        filename=item.name,
        inline=inline,
    )
    return _private(response, FILE_POLICY)


@require_http_methods(["GET", "POST"])
@gone_page
def fork(request, token: str):
    """Copy a shared item into the viewer's account, on a connection of theirs."""
    share = get_public_share(token, request.user)
    kind = kinds.get(share.kind)
    if not kind.forkable:
        raise Http404(f"A shared {kind.label.lower()} cannot be forked.")
    usable = Connection.objects.for_user(request.user)
    connections = list(usable)
    model_id = kind.model_of(share.content)
    having = [c for c in connections if _offers(c, model_id)]
    # The last used connection for this kind (as every form starts), among those that offer the model if any.
    latest = last_used(apps.get_model(kind.model).objects.for_user(request.user))
    start = pick_connection(
        usable.filter(pk__in=[c.pk for c in having]) if having else usable, latest and latest.connection_id
    )
    initial = {"connection": start.pk} if start else {}
    form = ForkForm(request.POST if request.method == "POST" else None, connections=connections, initial=initial)
    if request.method == "POST" and form.is_valid():
        connection = next(c for c in connections if c.pk == form.cleaned_data["connection"])
        target = kind.fork(share, request.user, connection, connection in having)
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


# ---------------------------------------------------------------- view code


@require_GET
def code(request, kind: str, pk: int):
    declared = kinds.get(kind)
    item = declared.get(request, pk)
    code = declared.code(item, snippets.base_url_for(request, declared.connection(item)))
    if code is None:
        raise Http404(f"A {declared.label.lower()} has no single request to show as code.")
    generated, notes = code
    context = {"title": declared.title(item), "snippets": generated, "notes": notes, "back": declared.url(item)}
    connection = declared.connection(item)
    context["api_key"] = connection.own_local_key(request.user) if connection is not None else ""
    return render(request, "sharing/code.html", context)


# ---------------------------------------------------------------- export


@require_GET
def export(request, kind: str, pk: int, fmt: str):
    """The item as a file (a kind routes this under its own URL, as its `urls()` declare)."""
    declared = kinds.get(kind)
    item = declared.get(request, pk)
    exported = declared.export(item, fmt)
    if exported is None:
        raise Http404("No such format.")
    body, content_type = exported
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{declared.filename(item)}.{fmt}"'
    return response
