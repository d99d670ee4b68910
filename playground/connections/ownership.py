"""Things owned by a user alone or by a team (a prompt, a dataset): who sees them and who may change them.

A personal item has an owner and no team; a team's item has its team (and its creator as owner). Every member of
the team sees and uses a team's item; the team's owner and admins may do everything with it, the other members
edit it (save versions) but do not delete it.
"""

from django.db import models
from django.db.models import Q

from playground.connections.models import Team

ADMIN, EDITOR = "admin", "editor"


class OwnedQuerySet(models.QuerySet):
    def for_user(self, user):
        """The user's own items and those of the teams the user is in."""
        if not user or not user.is_authenticated:
            return self.none()
        return self.filter(Q(owner=user, team=None) | Q(team__memberships__user=user)).distinct()

    def owned_by(self, user, team: Team | None):
        """The items of one owner (the user alone, or a team): where a name must be unique."""
        return self.filter(team=team) if team else self.filter(owner=user, team=None)


class Owned:
    """A mixin for a model with `owner` (a user) and `team` (nullable) foreign keys, each model declaring its own
    (so that their related names stay the model's)."""

    @property
    def owner_label(self) -> str:
        return self.team.name if self.team_id else "You"

    def role_of(self, user) -> str:
        """ "admin" (may do everything), "editor" (saves versions) or "" (no access)."""
        if self.team_id is None:
            return ADMIN if self.owner_id == user.pk else ""
        membership = self.team.membership_of(user)
        if membership is None:
            return ""
        return ADMIN if membership.manages else EDITOR


NAME_LENGTH = 100


class OwnedByUserOrTeam(Owned, models.Model):
    """A named thing with versions (`versions`, numbered), owned by a user or a team: its name is unique per owner
    (constraints named for the subclass: `prompt_name_per_user`...)."""

    # Each subclass declares `owner` (a user) and `team` (nullable), so their related names are its own.
    name = models.CharField(max_length=NAME_LENGTH)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    objects = OwnedQuerySet.as_manager()

    class Meta:
        abstract = True
        ordering = ["-updated", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], condition=Q(team=None), name="%(class)s_name_per_user"),
            models.UniqueConstraint(fields=["team", "name"], name="%(class)s_name_per_team"),
        ]

    def __str__(self) -> str:
        return self.name

    def latest(self):
        return self.versions.order_by("-number").first()
