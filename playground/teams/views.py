"""Teams, their members and invite links, and their connections (which members use but never see)."""

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib import messages
from django.db import transaction
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from playground.catalog.services import refresh_models
from playground.connections.forms import ConnectionForm
from playground.connections.models import Connection, add_team_local_connection
from playground.connections.signals import deleting_teams
from playground.teams import library
from playground.teams.forms import BudgetForm, InviteForm, RoleForm, TeamForm, TransferForm
from playground.teams.models import (
    ADMIN,
    MEMBER,
    OWNER,
    Invite,
    Membership,
    Team,
    audit,
    get_managed_team,
    get_team,
)
from playground.teams.usage import tokens_this_month


@require_http_methods(["GET", "POST"])
def index(request):
    form = TeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            team = Team.objects.create(name=form.cleaned_data["name"])
            Membership.objects.create(team=team, user=request.user, role=OWNER)
            audit(team, request.user, "created", f"Team “{team.name}” created by {request.user}.")
        messages.success(request, f"Team “{team.name}” created. Invite people with a link, then add a connection.")
        return redirect("teams:detail", team.pk)
    teams = Team.objects.for_user(request.user).prefetch_related("memberships")
    return render(request, "teams/index.html", {"teams": teams, "form": form})


@require_GET
def detail(request, pk):
    team, me = get_team(request, pk)
    memberships = list(team.memberships.select_related("user"))
    for membership in memberships:
        membership.used = tokens_this_month(team.pk, membership.user_id) if me.manages else None
    context = {
        "team": team,
        "me": me,
        "memberships": memberships,
        "connections": team.connections.all(),
        "offer_local": settings.LOCAL_API and not team.connections.filter(is_local=True, revoked=False).exists(),
        "invites": team.invites.all()[:20] if me.manages else [],
        "invite_form": InviteForm(),
        "transfer_form": TransferForm(members=[m for m in memberships if m.role != OWNER]),
        "library": library.grouped(team),
        "my_usage": tokens_this_month(team.pk, request.user.pk),
        "team_usage": tokens_this_month(team.pk),
    }
    return render(request, "teams/detail.html", context)


# ---------------------------------------------------------------- members


def _member(team, pk) -> Membership:
    return get_object_or_404(team.memberships.select_related("user"), pk=pk)


def _may_manage(me: Membership, other: Membership) -> bool:
    """The owner manages everyone else; an admin manages plain members."""
    return other.pk != me.pk and (me.role == OWNER or (me.role == ADMIN and other.role == MEMBER))


@require_POST
def remove_member(request, pk, mid):
    team, me = get_managed_team(request, pk)
    other = _member(team, mid)
    if not _may_manage(me, other):
        return HttpResponse("Only the owner removes an admin; nobody removes the owner.", status=403)
    other.delete()
    audit(team, request.user, "removed", f"{other.user} removed from the team by {request.user}.")
    messages.success(request, f"{other.user} was removed: their next request through a team connection is refused.")
    return redirect("teams:detail", team.pk)


@require_POST
def set_role(request, pk, mid):
    team, me = get_managed_team(request, pk)
    other = _member(team, mid)
    form = RoleForm(request.POST)
    if me.role != OWNER or other.role == OWNER or not form.is_valid():
        return HttpResponse("role: only the owner makes members admins (admin or member).", status=403)
    other.role = form.cleaned_data["role"]
    other.save(update_fields=["role"])
    audit(team, request.user, "role", f"{other.user} is now {other.role}.")
    return redirect("teams:detail", team.pk)


@require_POST
def set_budget(request, pk, mid):
    team, me = get_managed_team(request, pk)
    other = _member(team, mid)
    if not (_may_manage(me, other) or me.role == OWNER):
        return HttpResponse("Only the owner sets the budget of an admin or of the owner.", status=403)
    return _save_budget(request, team, other, "budget", f"Budget of {other.user}")


@require_POST
def set_team_budget(request, pk):
    """The team's monthly token budget, all members together (the owner's to set)."""
    team, me = get_managed_team(request, pk)
    if me.role != OWNER:
        return HttpResponse("Only the owner sets the team's budget.", status=403)
    return _save_budget(request, team, team, "team_budget", "Budget of the team")


def _save_budget(request, team, holder, action: str, whose: str):
    """A member's or the team's monthly token budget from the posted form, audited and said in words."""
    form = BudgetForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, error)
        return redirect("teams:detail", team.pk)
    holder.monthly_token_budget = form.cleaned_data["monthly_token_budget"]
    holder.save(update_fields=["monthly_token_budget"])
    budget = "no limit" if holder.monthly_token_budget is None else f"{holder.monthly_token_budget:,} tokens a month"
    audit(team, request.user, action, f"{whose}: {budget}.")
    messages.success(request, f"{whose}: {budget}.")
    return redirect("teams:detail", team.pk)


@require_POST
def leave(request, pk):
    team, me = get_team(request, pk)
    if me.role == OWNER:
        messages.error(request, "The owner cannot leave: transfer the ownership first, or delete the team.")
        return redirect("teams:detail", team.pk)
    me.delete()
    audit(team, request.user, "left", f"{request.user} left the team.")
    messages.success(request, f"You left {team.name}.")
    return redirect("teams:index")


@require_POST
def transfer(request, pk):
    team, me = get_team(request, pk)
    if me.role != OWNER:
        raise Http404("No such team.")
    others = list(team.memberships.exclude(pk=me.pk).select_related("user"))
    form = TransferForm(request.POST, members=others)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, error)
        return redirect("teams:detail", team.pk)
    new_owner = next(m for m in others if m.pk == form.cleaned_data["member"])
    with transaction.atomic():
        Membership.objects.filter(pk=me.pk).update(role=ADMIN)
        Membership.objects.filter(pk=new_owner.pk).update(role=OWNER)
        audit(team, request.user, "transferred", f"Ownership transferred from {request.user} to {new_owner.user}.")
    messages.success(request, f"{new_owner.user} now owns {team.name}; you are an admin.")
    return redirect("teams:detail", team.pk)


@require_http_methods(["GET", "POST"])
def delete(request, pk):
    team, me = get_team(request, pk)
    if me.role != OWNER:
        raise Http404("No such team.")
    if request.method == "POST":
        name = team.name
        deleting_teams.add(team.pk)
        try:
            team.delete()
        finally:
            deleting_teams.discard(team.pk)
        messages.success(request, f"Team “{name}” deleted, with its connections, usage and links.")
        return redirect("teams:index")
    return render(request, "teams/delete.html", {"team": team})


# ---------------------------------------------------------------- invites


@require_POST
def invite(request, pk):
    team, _ = get_managed_team(request, pk)
    form = InviteForm(request.POST)
    if form.is_valid():
        single = form.cleaned_data["uses"] == "single"
        created = Invite.objects.create(
            team=team, created_by=request.user, expires=timezone.now() + form.delta, max_uses=1 if single else None
        )
        uses = "one person" if single else "anyone with it"
        audit(
            team,
            request.user,
            "invited",
            f"Invite link made by {request.user} ({uses}, until {created.expires:%Y-%m-%d %H:%M} UTC).",
        )
        messages.success(request, "Invite link made: copy it from the list below.")
    return redirect("teams:detail", team.pk)


@require_POST
def revoke_invite(request, pk, iid):
    team, _ = get_managed_team(request, pk)
    item = get_object_or_404(team.invites, pk=iid)
    item.revoked = True
    item.save(update_fields=["revoked"])
    audit(team, request.user, "invite_revoked", f"Invite link revoked by {request.user}.")
    return redirect("teams:detail", team.pk)


@require_http_methods(["GET", "POST"])
def join(request, token):
    item = Invite.objects.select_related("team").filter(token=token).first()
    if item is not None and item.team.memberships.filter(user=request.user).exists():
        return redirect("teams:detail", item.team.pk)
    if item is None or item.revoked:
        context = {
            "title": "Invite not found",
            "words": "This invite link was revoked, or it never existed (check that it was copied whole).",
            "next_step": "Ask an owner or admin of the team for a new one.",
        }
        return render(request, "problem.html", context, status=404)
    team = item.team
    if not item.usable:
        words = {"revoked": "was revoked", "used": "was already used", "expired": "has expired"}[item.state]
        return render(request, "teams/join.html", {"invite": item, "problem": words}, status=410)
    if request.method == "POST":
        with transaction.atomic():
            locked = Invite.objects.select_for_update().get(pk=item.pk)
            if not locked.usable:
                return render(request, "teams/join.html", {"invite": item, "problem": "was already used"}, status=410)
            Invite.objects.filter(pk=item.pk).update(uses=locked.uses + 1)
            Membership.objects.create(team=team, user=request.user, role=MEMBER)
            audit(team, request.user, "joined", f"{request.user} joined with an invite link.")
        messages.success(request, f"Welcome to {team.name}: its connections are now in your pickers.")
        return redirect("teams:detail", team.pk)
    return render(request, "teams/join.html", {"invite": item})


# ---------------------------------------------------------------- team connections


def _team_connection(team, cid) -> Connection:
    return get_object_or_404(team.connections, pk=cid)


@require_http_methods(["GET", "POST"])
async def add_connection(request, pk):
    user = await request.auser()
    team, _ = await sync_to_async(get_managed_team)(request, pk)
    form = ConnectionForm(request.POST or None, instance=Connection(owner=user, team=team), user=user)
    if request.method == "POST" and await sync_to_async(form.is_valid)():
        connection = await sync_to_async(form.save)()
        await sync_to_async(audit)(
            team, user, "connection_added", f"Connection “{connection.name}” added ({connection.key_hint})."
        )
        listed, ok = await refresh_models(connection, user)
        (messages.success if ok else messages.warning)(request, f"Team connection “{connection.name}” added. {listed}")
        return redirect("teams:detail", team.pk)
    context = {"form": form, "team": team}
    return await sync_to_async(render)(request, "teams/connection_form.html", context)


@require_POST
def add_local_connection(request, pk):
    """One click: the team's connection to this site's own local API, with a key of the team's own."""
    team, _ = get_managed_team(request, pk)
    if team.connections.filter(is_local=True, revoked=False).exists():
        messages.info(request, "The team already has the built-in connection.")
        return redirect("teams:detail", team.pk)
    connection = add_team_local_connection(team, request.user)
    if connection is None:
        messages.error(request, "The built-in local API is off on this server (LOCAL_API=off).")
        return redirect("teams:detail", team.pk)
    audit(team, request.user, "connection_added", f"Connection “{connection.name}” added ({connection.key_hint}).")
    messages.success(request, f"Team connection “{connection.name}” added: members can chat on it now.")
    return redirect("teams:detail", team.pk)


@require_http_methods(["GET", "POST"])
def edit_connection(request, pk, cid):
    team, _ = get_managed_team(request, pk)
    connection = _team_connection(team, cid)
    if connection.is_local:
        return HttpResponse("The built-in connection has nothing to edit: revoke it, or add it again.", status=400)
    form = ConnectionForm(request.POST or None, instance=connection, user=request.user)
    if request.method == "POST" and form.is_valid():
        connection.audit_actor = request.user
        form.save()
        messages.success(request, f"Team connection “{connection.name}” saved.")
        return redirect("teams:detail", team.pk)
    return render(request, "teams/connection_form.html", {"form": form, "team": team, "connection": connection})


@require_POST
def revoke_connection(request, pk, cid):
    team, _ = get_managed_team(request, pk)
    connection = _team_connection(team, cid)
    connection.revoked = True
    connection.save(update_fields=["revoked"])
    audit(team, request.user, "connection_revoked", f"Connection “{connection.name}” revoked by {request.user}.")
    messages.success(request, f"“{connection.name}” revoked: members' next requests through it are refused.")
    return redirect("teams:detail", team.pk)


@require_POST
def delete_connection(request, pk, cid):
    team, _ = get_managed_team(request, pk)
    connection = _team_connection(team, cid)
    if not connection.revoked:
        return HttpResponse("Revoke the connection before deleting it.", status=409)
    connection.delete()
    audit(team, request.user, "connection_deleted", f"Connection “{connection.name}” deleted by {request.user}.")
    return redirect("teams:detail", team.pk)
