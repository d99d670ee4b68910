"""The conversation kind's own pages under the sharing namespace: "N watching" and importing a conversation."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from playground.catalog.models import CatalogModel
from playground.chat.models import get_conversation
from playground.chat.sharing import transfer
from playground.chat.sharing.forms import ImportForm
from playground.connections.models import Connection
from playground.sharing.models import watching


@require_GET
def watchers(request, pk: int):
    conversation = get_conversation(request, pk)
    count = watching(conversation)
    context = {"count": count, "conversation": conversation, "poll": True}
    return render(request, "chat/sharing/_watching.html", context)


@require_http_methods(["GET", "POST"])
def import_conversation(request):
    form = ImportForm(request.POST if request.method == "POST" else None, request.FILES or None)
    error = ""
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            if upload is not None and upload.size > transfer.MAX_IMPORT_BYTES:
                raise transfer.ImportError_(f"file: over the limit of {transfer.MAX_IMPORT_MB} MB.")
            imported = transfer.parse(upload.read() if upload is not None else form.cleaned_data["text"])
        except transfer.ImportError_ as exc:
            error = str(exc)
        else:
            connections = list(Connection.objects.for_user(request.user))
            having = [c for c in connections if imported.model and _offers(c, imported.model)]
            connection = (having or connections or [None])[0]
            conversation = transfer.create(imported, request.user, connection)
            messages.success(request, f"Imported “{conversation.display_title}”: {len(imported.messages)} messages.")
            return redirect("chat:conversation", pk=conversation.pk)
    return render(request, "chat/sharing/import.html", {"form": form, "error": error})


def _offers(connection: Connection, model_id: str) -> bool:
    return CatalogModel.objects.for_connection(connection).filter(model_id=model_id).exists()
