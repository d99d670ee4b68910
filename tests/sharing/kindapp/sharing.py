from django.shortcuts import get_object_or_404

from playground.sharing import snippets
from playground.sharing.kinds import Kind
from tests.sharing.kindapp.models import Note


class NoteKind(Kind):
    name, label, plural = "note", "Note", "Notes"
    model, template = "kindapp.Note", "kindapp/shared.html"

    def get(self, request, pk):
        return get_object_or_404(Note, owner=request.user, pk=pk)

    def title(self, item):
        return f"Note {item.pk}"

    def url(self, item):
        return "/"

    def freeze(self, item, files):
        return {"words": item.words}

    def describe(self, content):
        return f"A note of {len(content['words'])} characters."

    def code(self, item, base_url):
        body = {"model": "local/chat", "messages": [{"role": "user", "content": item.words}]}
        url = snippets.endpoint(base_url, "chat/completions")
        return [snippets.Snippet("curl", "shell", snippets.curl_json(url, body))], []

    def connection(self, item):
        return None
