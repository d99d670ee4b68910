from asgiref.sync import async_to_sync
from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from playground.catalog.models import CatalogModel
from playground.catalog.services import refresh_models
from playground.connections.models import get_connection


def index(request, connection_pk):
    connection = get_connection(request, connection_pk)
    models = CatalogModel.objects.for_connection(connection)
    return render(request, "catalog/index.html", {"connection": connection, "models": models})


@require_POST
def refresh(request, connection_pk):
    connection = get_connection(request, connection_pk)
    message, ok = async_to_sync(refresh_models)(connection)
    (messages.success if ok else messages.warning)(request, message)
    return redirect("catalog:index", connection.pk)
