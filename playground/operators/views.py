"""The administration page for superusers: every account with its sign-ins, teams, usage and sessions;
deactivate and reactivate; the instance audit log."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from playground.operators import services
from playground.operators.models import AuditEvent
from playground.operators.overview import rows_for

PAGE = 50


def _require_superuser(request) -> None:
    """Anyone but a superuser gets 404: the page is not even said to exist."""
    if not request.user.is_superuser:
        raise Http404("No such page.")


def _account(pk):
    return get_object_or_404(get_user_model(), pk=pk)


@require_GET
def users(request):
    _require_superuser(request)
    query = request.GET.get("q", "").strip()[:150]
    accounts = get_user_model().objects.order_by("username")
    if query:
        accounts = accounts.filter(Q(username__icontains=query) | Q(email__icontains=query))
    page = Paginator(accounts, PAGE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "rows": rows_for(list(page.object_list)),
        "query": query,
        "events": AuditEvent.objects.select_related("actor", "subject")[:100],
    }
    return render(request, "operators/users.html", context)


def _act(request, pk, action):
    _require_superuser(request)
    try:
        messages.success(request, action(_account(pk), actor=request.user))
    except services.Refused as exc:
        messages.error(request, str(exc))
    return redirect("operators:users")


@require_POST
def deactivate(request, pk):
    return _act(request, pk, services.deactivate)


@require_POST
def reactivate(request, pk):
    return _act(request, pk, services.reactivate)
