from asgiref.sync import sync_to_async
from django.contrib import messages
from django.http import HttpResponseBadRequest
from django.shortcuts import aget_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from playground.connections.forms import ConnectionForm
from playground.connections.models import Connection, get_connection
from playground.connections.services import test_connection
from playground.connections.signals import connection_added


def index(request):
    connections = Connection.objects.for_user(request.user).filter(team=None)
    return render(request, "connections/index.html", {"connections": connections})


@require_http_methods(["GET", "POST"])
async def create(request):
    user = await request.auser()
    form = ConnectionForm(request.POST or None, instance=Connection(owner=user))
    if request.method == "POST" and await sync_to_async(form.is_valid)():
        connection = await sync_to_async(form.save)()
        # The catalog is what the provider lists: it fetches it now rather than leave the pickers empty.
        answers = await connection_added.asend(sender=Connection, connection=connection, user=user)
        listed, ok = answers[0][1] if answers else ("", True)
        if ok:
            messages.success(request, f"Connection “{connection.name}” added. {listed}")
        else:
            messages.warning(request, f"Connection “{connection.name}” added. {listed} (Open its Models.)")
        return redirect("connections:index")
    return await sync_to_async(render)(request, "connections/form.html", {"form": form})


@require_http_methods(["GET", "POST"])
def edit(request, pk):
    connection = get_connection(request, pk)
    if connection.is_local:
        return HttpResponseBadRequest("The built-in Local connection cannot be edited.")
    form = ConnectionForm(request.POST or None, instance=connection)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, f"Connection “{connection.name}” saved.")
        return redirect("connections:index")
    return render(request, "connections/form.html", {"form": form, "connection": connection})


@require_POST
def delete(request, pk):
    connection = get_connection(request, pk)
    if connection.is_local:
        return HttpResponseBadRequest("The built-in Local connection cannot be deleted.")
    connection.delete()
    messages.success(request, f"Connection “{connection.name}” deleted.")
    return redirect("connections:index")


@require_POST
async def test(request, pk):
    user = await request.auser()
    connection = await aget_object_or_404(Connection.objects.managed_by(user), pk=pk)
    await test_connection(connection, user)
    if request.htmx:
        context = {"connection": connection}
        return await sync_to_async(render)(request, "connections/index.html#connection-status", context)
    return redirect("connections:index")


@require_http_methods(["GET", "POST"])
def rotate_key(request, pk):
    """Confirm, then give the Local connection a new key (the old one stops working at once)."""
    connection = get_connection(request, pk)
    if not connection.is_local:
        return HttpResponseBadRequest("Only the built-in Local connection's key is rotated here; edit the others.")
    if request.method == "POST":
        connection.rotate_key()
        # The new key in full, this once (the connections page shows it masked from now on).
        context = {"connection": connection, "new_key": connection.own_local_key(request.user)}
        response = render(request, "connections/rotate_key.html", context)
        response["Cache-Control"] = "no-store"
        return response
    return render(request, "connections/rotate_key.html", {"connection": connection})
