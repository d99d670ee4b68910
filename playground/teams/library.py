"""The team library: an item moved to the team is a team-only share link (live for a conversation), so members
read it and fork it while only its author edits the original."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from playground import inputs
from playground.sharing import freeze as freezing
from playground.sharing.models import Share, tell_viewers
from playground.sharing.views import SOURCES
from playground.teams.models import Team

KINDS = (Share.CONVERSATION, Share.RERANK, Share.SPEECH, Share.BATCH)
ORDER = {kind: position for position, kind in enumerate(KINDS)}


def move(user, item, team: Team) -> tuple[Share, bool]:
    """The item's team-only link for `team`, made now or refreshed; (share, created). Raises NotShareable."""
    kind = freezing.kind_of(item)
    share = Share.objects.for_user(user).for_source(item).filter(visibility=Share.TEAM, team=team).first()
    created = share is None
    if created:
        share = Share(owner=user, kind=kind, title=freezing.title_of(item)[:200], visibility=Share.TEAM, team=team)
        setattr(share, Share.field_for(item), item)
        share.live = kind == Share.CONVERSATION
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
    if kind not in KINDS:
        raise Http404("Only conversations, rerank runs, clips and batches go to a team library.")
    item = SOURCES[kind](request, pk)  # the user's own item, or 404
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
    """The library by kind (conversations, rerank runs, clips, batches), newest first in each."""
    shares = team.shares.select_related("owner").order_by("-created")[:200]
    labels = {Share.CONVERSATION: "Conversations", Share.RERANK: "Rerank runs", Share.SPEECH: "Speech clips"}
    labels |= {Share.BATCH: "Batches", Share.EVALUATION: "Evaluations"}
    groups: dict[str, list[Share]] = {kind: [] for kind in labels}
    for share in shares:
        groups[share.kind].append(share)
    # An evaluation shared "Team members only" is listed too (it is read, not forked), when there is one.
    return [(labels[kind], groups[kind]) for kind in labels if kind in KINDS or groups[kind]]
