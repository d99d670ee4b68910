"""The site's URLs and handlers, with two views that fail: what a 403 and a 500 look like to a person."""

from django.core.exceptions import PermissionDenied
from django.urls import path

from playground.urls import handler400, handler403, handler404, handler500, urlpatterns  # noqa: F401


def refused(request):
    raise PermissionDenied("not yours")


def broken(request):
    raise RuntimeError("a bug")


urlpatterns = [path("test-refused/", refused), path("test-broken/", broken), *urlpatterns]
