"""A prompt version as a kind of share: a read-only page with the version's messages, parameters and tools, its
diff to the previous version, and a fork that copies it into the viewer's own library as a new prompt."""

import json
from urllib.parse import quote, urlencode

from django.shortcuts import get_object_or_404
from django.urls import reverse

from playground.prompts import diffing
from playground.prompts.compiling import compile_request, version_variables
from playground.prompts.drafts import Draft, save_version
from playground.prompts.models import Prompt, PromptVersion, owned_by
from playground.sharing import snippets
from playground.sharing.kinds import Kind


class PromptVersionKind(Kind):
    name, label, plural = "prompt", "Prompt version", "Prompt versions"
    model, template = "prompts.PromptVersion", "prompts/shared.html"
    fork_words = " as a new prompt in your library"

    def get(self, request, pk):
        return get_object_or_404(PromptVersion.objects.for_user(request.user).select_related("prompt"), pk=pk)

    def title(self, item):
        return item.ref

    def url(self, item):
        return reverse("prompts:version", args=[item.prompt_id, item.number])

    def freeze(self, item, files):
        previous = item.prompt.versions.filter(number__lt=item.number).order_by("-number").first()
        return {"version": _content(item), "previous": _content(previous) if previous else None}

    def describe(self, content):
        version = content["version"]
        return f"{version['ref']} for {version['model'] or 'any model'}: {version['template'][:120]}"

    def show(self, share, content, request):
        version, previous = _Frozen(content["version"]), content.get("previous")
        content["sections"] = diffing.sections(_Frozen(previous), version) if previous else None
        content["request_json"] = json.dumps(compile_request(version, strict=False), indent=2, ensure_ascii=False)
        content["variables"] = version_variables(version)
        return content

    def model_of(self, content):
        return content["version"]["model"]

    def connection(self, item):
        return item.connection

    def code(self, item, base_url):
        """The compiled request (each variable as a placeholder to fill), and the fetch of the prompt by label."""
        names = version_variables(item)
        body = compile_request(item, {name: f"<{name}>" for name in names})
        url = snippets.endpoint(base_url, "chat/completions")
        query = urlencode({"label": "production", **{name: f"<{name}>" for name in names}})
        fetch = (
            f'curl -sS --fail-with-body "$PLAYGROUND_URL/api/prompts/{quote(item.prompt.name)}?{query}" \\\n'
            '  -H "Authorization: Bearer $PLAYGROUND_TOKEN"\n'
        )
        generated = [
            snippets.Snippet("curl", "shell", snippets.curl_json(url, body, stream=bool(body.get("stream")))),
            snippets.Snippet("JavaScript", "javascript", snippets.js(url, body)),
            snippets.Snippet("Fetch by label", "shell", fetch),
        ]
        notes = [
            f"{item.ref} compiled: replace each <variable> with its value.",
            "“Fetch by label” asks the playground for the version a label points at (PLAYGROUND_TOKEN: a pgp_ token "
            "from Prompts → API tokens; PLAYGROUND_URL: this site's address).",
        ]
        return generated, notes

    def fork(self, share, user, connection, offered):
        frozen = share.content["version"]
        base = frozen["name"][:80]
        name, n = base, 1
        while owned_by(user, None).filter(name=name).exists():
            n += 1
            name = f"{base} ({n})"
        prompt = Prompt.objects.create(owner=user, name=name)
        draft = Draft(
            system=frozen["system"],
            shots=frozen["shots"],
            template=frozen["template"],
            model_id=frozen["model"],
            connection=connection,
            params=frozen["params"],
            values=frozen["values"],
            tools=frozen["tools"],
            message=f"Forked from {frozen['ref']}",
        )
        save_version(prompt, draft, user)
        return reverse("prompts:detail", args=[prompt.pk])


def _content(version: PromptVersion) -> dict:
    return {
        "name": version.prompt.name,
        "ref": version.ref,
        "number": version.number,
        "message": version.message,
        "created": version.created.isoformat(),
        "system": version.system,
        "shots": version.shots,
        "template": version.template,
        "model": version.model_id,
        "params": version.params,
        "values": version.values,
        "tools": version.tools,
    }


class _Frozen:
    """A frozen version read like a PromptVersion (for the diff and the compiled request)."""

    def __init__(self, content: dict):
        self.system, self.shots, self.template = content["system"], content["shots"], content["template"]
        self.model_id, self.params, self.values, self.tools = (
            content["model"],
            content["params"],
            content["values"],
            content["tools"],
        )

    messages = PromptVersion.messages
