from django.contrib import messages
from django.db.models import Q
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import aget_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from playground import inputs
from playground.catalog.forms import CAPABILITIES, AddModelForm, ModelPickerForm, OverrideForm
from playground.catalog.models import KINDS, CatalogModel
from playground.catalog.services import add_by_hand, own_entry, refresh_models
from playground.connections.models import Connection, get_connection, get_usable_connection


def get_model(connection, pk) -> CatalogModel:
    """A model of this connection (its own entry, or a seeded one it sees), or 404."""
    visible = (
        Q(connection=connection) | Q(connection=None, scope="local")
        if connection.is_local
        else Q(connection=connection)
    )
    model = CatalogModel.objects.filter(visible, pk=pk).first()
    if model is None:
        raise Http404("No such model on this connection.")
    return model


def index(request, connection_pk, add_form=None):
    connection = get_connection(request, connection_pk)
    models = CatalogModel.objects.for_connection(connection, unavailable=True)
    context = {"connection": connection, "models": models, "add_form": add_form or AddModelForm()}
    return render(request, "catalog/index.html", context)


@require_POST
async def refresh(request, connection_pk):
    user = await request.auser()
    connection = await aget_object_or_404(Connection.objects.managed_by(user), pk=connection_pk)
    message, ok = await refresh_models(connection, user)
    (messages.success if ok else messages.warning)(request, message)
    return redirect("catalog:index", connection.pk)


@require_POST
def add(request, connection_pk):
    connection = get_connection(request, connection_pk)
    form = AddModelForm(request.POST)
    if not form.is_valid():
        return index(request, connection_pk, add_form=form)
    entry = add_by_hand(connection, form.cleaned_data["model_id"], form.cleaned_data["kind"])
    messages.success(
        request,
        f"{entry.model_id} added as a {entry.kind} model. If the provider does not know it, using it shows "
        "the provider's error.",
    )
    return redirect("catalog:index", connection.pk)


@require_http_methods(["GET", "POST"])
def edit(request, connection_pk, pk):
    connection = get_connection(request, connection_pk)
    model = get_model(connection, pk)
    form = OverrideForm(request.POST or None, instance=model)
    if request.method == "POST" and form.is_valid():
        entry = form.apply_to(own_entry(connection, CatalogModel.objects.get(pk=model.pk)))
        messages.success(request, f"{entry.model_id} saved for {connection.name}.")
        url = reverse("catalog:index", args=[connection.pk])
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    template = "catalog/edit.html#override-form" if request.htmx else "catalog/edit.html"
    return render(request, template, {"connection": connection, "model": model, "form": form})


@require_GET
def picker(request):
    """The model picker alone, for pages whose picker changes nothing else (htmx): ?kind=&capability=&typed=1."""
    kind, capability = request.GET.get("kind", ""), request.GET.get("capability", "")
    if kind not in ("", *(value for value, _ in KINDS)):
        return HttpResponseBadRequest(f"kind: one of {', '.join(value for value, _ in KINDS)}.")
    if capability not in ("", *CAPABILITIES):
        return HttpResponseBadRequest(f"capability: one of {', '.join(CAPABILITIES)}.")
    wanted = request.GET.get("connection")
    connection = get_usable_connection(request, inputs.object_id(wanted)) if wanted else None
    initial = {"connection": connection, "model": request.GET.get("model")}
    form = ModelPickerForm(
        user=request.user, initial=initial, kind=kind, capability=capability, typed=bool(request.GET.get("typed"))
    )
    return render(request, "kit/_model_picker.html", {"form": form})
