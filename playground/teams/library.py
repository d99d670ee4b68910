"""The team library: an item moved to the team is a team-only share link (live for a conversation), so members
read it and fork it while only its author edits the original."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from playground import inputs
from playground.sharing import freeze as freezing
from playground.sharing import kinds
from playground.sharing.models import Share, tell_viewers
from playground.teams.models import Team


def move(user, item, team: Team) -> tuple[Share, bool]:
    """The item's team-only link for `team`, made now or refreshed; (share, created). Raises NotShareable."""
    share = Share.objects.for_user(user).for_source(item).filter(visibility=Share.TEAM, team=team).first()
    created = share is None
    if created:
        share = freezing.new_share(user, item, visibility=Share.TEAM, team=team, live=kinds.of(item).live)
        share.save()
    try:
        freezing.freeze(share)
    except freezing.NotShareable:
        if created:
            share.delete()
        raise
    if not created:
        tell_viewers(share.group, "share.updated")
    return share, created


@require_POST
def move_view(request, kind: str, pk: int):
    declared = kinds.get(kind)
    if not declared.library:
        raise Http404(f"{declared.plural} do not go to a team library.")
    item = declared.get(request, pk)  # the user's own item, or 404
    team = get_object_or_404(Team.objects.for_user(request.user), pk=inputs.object_id(request.POST.get("team")))
    try:
        share, created = move(request.user, item, team)
    except freezing.NotShareable as exc:
        messages.error(request, str(exc))
        return redirect("teams:detail", team.pk)
    words = "is now in" if created else "was updated in"
    messages.success(request, f"“{share.title}” {words} the library of {team.name}: members read and fork it.")
    return redirect("teams:detail", team.pk)


def grouped(team: Team) -> list[tuple[str, list[Share]]]:
    """The library by kind (in the order of settings.SHARE_KINDS), newest first in each."""
    shares = team.shares.select_related("owner").order_by("-created")[:200]
    groups: dict[str, list[Share]] = {kind.name: [] for kind in kinds.all_kinds()}
    for share in shares:
        groups.setdefault(share.kind, []).append(share)
    # A kind that is not moved to a library (an evaluation shared "Team members only") is listed when there is one.
    return [(kind.plural, groups[kind.name]) for kind in kinds.all_kinds() if kind.library or groups[kind.name]]
