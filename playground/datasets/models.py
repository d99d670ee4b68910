"""Datasets: named rows of inputs (named like a template's {{variables}}) and an expected output, owned by a user or
a team, kept as immutable versions (v1, v2, …): each edit, import or restore is a new version."""

from django.conf import settings
from django.db import models
from django.http import Http404
from django.shortcuts import get_object_or_404

from playground.connections.models import Team
from playground.connections.ownership import NAME_LENGTH, OwnedByUserOrTeam  # noqa: F401 (NAME_LENGTH: the forms read it here)

MESSAGE_LENGTH = 300
EXPECTED = "expected"


class ImmutableVersion(Exception):
    """A dataset version is never changed in place: a change is a new version."""


class Dataset(OwnedByUserOrTeam):
    # A personal dataset has an owner and no team; a team's dataset has its team (and its creator as owner).
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="datasets")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="datasets")

    def latest(self) -> "DatasetVersion | None":
        return super().latest()


class VersionQuerySet(models.QuerySet):
    def for_user(self, user):
        return self.filter(dataset__in=Dataset.objects.for_user(user))

    def listed(self):
        """Without their rows: a history of 10,000-row versions reads only what it shows."""
        return self.defer("rows")

    def update(self, **kwargs):
        raise ImmutableVersion("dataset versions are never updated in place.")


class DatasetVersion(models.Model):
    """One immutable state of a dataset: its input columns and its rows, stored as one JSON list so that a
    10,000-row version is one row to write and to read (docs/performance.md)."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created = models.DateTimeField(auto_now_add=True)
    message = models.CharField(max_length=MESSAGE_LENGTH, blank=True)
    columns = models.JSONField(default=list, blank=True, help_text="The input columns' names, in order.")
    rows = models.JSONField(default=list, blank=True, help_text='[{"values": {column: text}, "expected": text}]')
    row_count = models.PositiveIntegerField(default=0)
    restored_from = models.PositiveIntegerField(null=True, blank=True)

    objects = VersionQuerySet.as_manager()

    class Meta:
        ordering = ["-number"]
        constraints = [models.UniqueConstraint(fields=["dataset", "number"], name="one_number_per_dataset_version")]

    def __str__(self) -> str:
        return self.ref

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ImmutableVersion(f"{self}: a dataset version is never changed; save a new version instead.")
        self.row_count = len(self.rows)
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ImmutableVersion(f"{self}: a dataset version is never deleted on its own.")

    @property
    def ref(self) -> str:
        return f"{self.dataset.name}@v{self.number}"


def get_dataset(request, pk) -> Dataset:
    """A dataset the user may see (own or a team's), or 404."""
    return get_object_or_404(Dataset.objects.for_user(request.user).select_related("team"), pk=pk)


def get_version(dataset: Dataset, number) -> DatasetVersion:
    try:
        number = int(number)
    except (TypeError, ValueError):
        raise Http404("No such version.") from None
    version = dataset.versions.filter(number=number).first()
    if version is None:
        raise Http404(f"{dataset.name} has no version v{number} (any more).")
    return version
