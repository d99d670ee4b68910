"""Groups to teams: the provider's groups claim decides, at every sign-in, which mapped teams a person is in and
with which role (PLAYGROUND_OIDC_GROUP_TEAMS, e.g. "ml-demo=Demos:member; ml-leads=Demos:admin").

Only teams named in the mapping follow the provider; a person's other teams are left alone, and a mapped team is
joined only once someone has made it (and so owns it). In a mapped team,
joining, a role change and removal follow the groups; the team's owner is never demoted or removed (a team keeps its
owner; ownership moves on the team page). A removal is the teams app's: the membership row is deleted and the team's
audit log says so, so it takes effect exactly as when an admin removes a member.
"""

import logging
from dataclasses import dataclass

from django.conf import settings

from playground.teams.models import ADMIN, MEMBER, OWNER, Membership, Team, audit

log = logging.getLogger(__name__)
RANK = {MEMBER: 1, ADMIN: 2}


@dataclass(frozen=True)
class Rule:
    group: str
    team: str
    role: str


def parse(text: str) -> list[Rule]:
    """Rules from "group=Team:role" entries separated by ";" or new lines; ValueError in words for a bad one."""
    rules = []
    for entry in text.replace("\n", ";").split(";"):
        entry = entry.strip()
        if not entry:
            continue
        group, equals, rest = entry.partition("=")
        team, colon, role = rest.rpartition(":")
        if not colon:
            team, role = rest, MEMBER
        group, team, role = group.strip(), team.strip(), role.strip().lower()
        if not equals or not group or not team:
            raise ValueError(f"PLAYGROUND_OIDC_GROUP_TEAMS: “{entry}” is not group=Team:role.")
        if role not in RANK:
            raise ValueError(f"PLAYGROUND_OIDC_GROUP_TEAMS: the role in “{entry}” must be member or admin.")
        if len(team) > 100:
            raise ValueError(f"PLAYGROUND_OIDC_GROUP_TEAMS: the team name in “{entry}” is over 100 characters.")
        rules.append(Rule(group, team, role))
    return rules


def roles_for(groups: set[str], rules: list[Rule]) -> dict[str, str | None]:
    """Every mapped team, with the highest role its groups give (None: the person is in none of its groups)."""
    roles: dict[str, str | None] = {rule.team: None for rule in rules}
    for rule in rules:
        current = roles[rule.team]
        if rule.group in groups and (current is None or RANK[rule.role] > RANK[current]):
            roles[rule.team] = rule.role
    return roles


def sync_teams(user, groups: set[str]) -> list[str]:
    """Apply the mapping to `user`; returns what changed, in words (also written to each team's audit log)."""
    changes = []
    for name, role in roles_for(groups, parse(settings.OIDC_GROUP_TEAMS)).items():
        team = Team.objects.filter(name=name).order_by("pk").first()
        if team is None:
            # Made by a person on the Teams page, who owns it: a team made here would have no owner.
            if role is not None:
                log.warning("Group mapping names the team %r, which does not exist: nobody joins it.", name)
            continue
        membership = team.memberships.filter(user=user).first()
        if role is None:
            if membership is not None and membership.role != OWNER:
                membership.delete()
                words = f"{user} removed from the team by single sign-on: in none of its groups any more."
                audit(team, None, "removed", words)
                changes.append(words)
        elif membership is None:
            Membership.objects.create(team=team, user=user, role=role)
            words = f"{user} joined as {role} through single sign-on."
            audit(team, None, "joined", words)
            changes.append(words)
        elif membership.role not in (OWNER, role):
            membership.role = role
            membership.save(update_fields=["role"])
            words = f"{user} is now {role} (single sign-on)."
            audit(team, None, "role", words)
            changes.append(words)
    return changes
