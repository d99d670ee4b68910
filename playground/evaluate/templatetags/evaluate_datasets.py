"""The dataset versions an evaluation's owner may take test cases from (the "Use dataset…" menu, _dataset.html)."""

from django import template

from playground.datasets.models import DatasetVersion

register = template.Library()
LISTED = 200


@register.simple_tag
def dataset_versions_for(user):
    versions = DatasetVersion.objects.for_user(user).listed().select_related("dataset")
    return list(versions.order_by("dataset__name", "-number")[:LISTED])
