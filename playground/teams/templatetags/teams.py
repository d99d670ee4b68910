from django import template

register = template.Library()


@register.filter
def get(mapping, key):
    """mapping[key] in a template (the usage tables name their grouping columns)."""
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.inclusion_tag("teams/_move.html", takes_context=True)
def move_to_team(context, item, size: str = "btn-small") -> dict:
    """A "Move to team" form for the user's own item, shown only to a user in at least one team."""
    from playground.sharing import kinds
    from playground.teams.models import Team

    request = context["request"]
    teams = getattr(request, "_move_teams", None)
    if teams is None:  # once per request: a list of clips or batches asks for every row
        teams = list(Team.objects.for_user(request.user)) if request.user.is_authenticated else []
        request._move_teams = teams
    return {
        "teams": teams,
        "kind": kinds.of(item).name,
        "item": item,
        "size": size,
        "csrf_token": context.get("csrf_token"),
    }
