"""A batch as a kind of share: its status, requests and results (at most BATCH_ROWS of each)."""

import json

from asgiref.sync import async_to_sync
from django.urls import reverse

from playground.batches import services
from playground.batches.models import Batch, get_batch
from playground.sharing import snippets
from playground.sharing.kinds import Kind
from playground.upstream.errors import UpstreamError

BATCH_ROWS = 1000  # a batch share shows at most this many requests


class BatchKind(Kind):
    name, label, plural = "batch", "Batch", "Batches"
    model, template = "batches.Batch", "batches/shared.html"
    fork_words = ", its requests and results (nothing is sent again),"

    def get(self, request, pk):
        return get_batch(request, pk)

    def title(self, item):
        return f"Batch {item.input_filename or item.remote_id}"

    def url(self, item):
        return reverse("batches:index")

    def freeze(self, item, files):
        return batch_content(item)

    def describe(self, content):
        return f"A batch of {content['total']} requests, {content['status'].replace('_', ' ')}."

    def show(self, share, content, request):
        content["requests_json"] = "\n".join(json.dumps(body, ensure_ascii=False) for body in content["requests"])
        return content

    def model_of(self, content):
        """Its first request's model."""
        first = next((body for body in content.get("requests") or [] if isinstance(body, dict)), {})
        return str(first.get("model") or "")

    def fork(self, share, user, connection, offered):
        """A record of the shared batch's requests and results, with no provider batch behind it."""
        content = share.content
        counts = {"total": content["total"], "completed": content["done"] - content["failed"]}
        counts["failed"] = content["failed"]
        copy = Batch.objects.create(
            owner=user,
            connection=connection,
            remote_id=f"fork of {content['remote_id']}"[:200],
            input_filename=content["input_filename"],
            request_count=content["total"],
            status=content["status"],
            request_counts=counts,
            metadata=content["metadata"] or {},
            data={"metadata": content["metadata"] or {}, "errors": content["errors"] or None},
            usage_recorded=True,  # nothing was sent: there is no usage to file
            copy={"requests": content["requests"], "rows": content["rows"]},
        )
        return reverse("batches:results", args=[copy.pk])

    def code(self, item, base_url):
        filename = item.input_filename or "requests.jsonl"
        generated = batch_snippets(
            base_url,
            filename=filename,
            metadata=item.metadata,
            completion_window=str(item.data.get("completion_window") or "24h"),
        )
        return generated, [f"Run it beside {filename} (the batch's input file)."]


def batch_content(batch: Batch) -> dict:
    content = {
        "status": batch.status,
        "remote_id": batch.remote_id,
        "input_filename": batch.input_filename,
        "total": batch.total,
        "done": batch.done,
        "failed": batch.failed,
        "percent": batch.percent,
        "metadata": batch.metadata,
        "errors": batch.errors,
        "timeline": [(label, moment.isoformat()) for label, moment in batch.timeline()],
        "rows": [],
        "requests": [],
        "note": "",
    }
    if batch.copy is not None:  # a fork: its frozen copy, as it was shared
        content["requests"] = (batch.copy.get("requests") or [])[:BATCH_ROWS]
        content["rows"] = (batch.copy.get("rows") or [])[:BATCH_ROWS]
        return content
    try:
        requests = services.parse_jsonl(async_to_sync(services.file_content)(batch, batch.input_file_id))
        content["requests"] = [item.get("body") for item in requests[:BATCH_ROWS]]
        if batch.is_terminal:
            rows = async_to_sync(services.results)(batch)
            content["rows"] = [vars(row) for row in rows[:BATCH_ROWS]]
    except UpstreamError as error:
        content["note"] = f"The provider did not return the batch's files ({error.message}); only its status is shared."
    return content


def batch_snippets(
    base_url: str, *, filename: str, metadata: dict, completion_window: str = "24h"
) -> list[snippets.Snippet]:
    create = {"endpoint": "/v1/chat/completions", "completion_window": completion_window}
    if metadata:
        create["metadata"] = metadata
    files_url, batches_url = snippets.endpoint(base_url, "files"), snippets.endpoint(base_url, "batches")
    curl = (
        f"FILE_ID=$(curl -sS --fail-with-body {files_url} \\\n"
        f'  -H "Authorization: Bearer ${snippets.KEY_VARIABLE}" \\\n'
        f"  -F purpose=batch -F file=@{filename} \\\n"
        "  | python3 -c 'import json, sys; print(json.load(sys.stdin)[\"id\"])')\n"
        f"curl -sS --fail-with-body {batches_url} \\\n"
        f'  -H "Authorization: Bearer ${snippets.KEY_VARIABLE}" \\\n'
        '  -H "Content-Type: application/json" \\\n'
        f"  -d \"$(python3 -c 'import json, sys; print(json.dumps({{**json.loads(sys.argv[1]), "
        f'"input_file_id": sys.argv[2]}}))\' {json.dumps(json.dumps(create))} "$FILE_ID")"\n'
    )
    python = (
        snippets.openai_head(base_url) + f"with open({filename!r}, 'rb') as requests:\n"
        '    uploaded = client.files.create(file=requests, purpose="batch")\n'
        f"batch = client.batches.create(\n    input_file_id=uploaded.id,\n{snippets.py_kwargs(create)})\n"
        "print(batch.id, batch.status)\n"
    )
    js = (
        'import { readFile } from "node:fs/promises";\n\n'
        f"const auth = {{ {snippets.AUTH_JS} }};\n"
        "const form = new FormData();\n"
        'form.append("purpose", "batch");\n'
        f'form.append("file", new Blob([await readFile({json.dumps(filename)})]), {json.dumps(filename)});\n'
        f'const uploaded = await fetch({json.dumps(files_url)}, {{ method: "POST", headers: auth, body: form }});\n'
        "if (!uploaded.ok) throw new Error(`${uploaded.status} ${await uploaded.text()}`);\n"
        "const file = await uploaded.json();\n"
        f"const response = await fetch({json.dumps(batches_url)}, {{\n"
        '  method: "POST",\n'
        '  headers: { ...auth, "Content-Type": "application/json" },\n'
        f"  body: JSON.stringify({{ input_file_id: file.id, ...{snippets.json_text(create)} }}),\n"
        "});\n"
        "if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);\n"
        "const created = await response.json();\n"
        "console.log(created.id, created.status);\n"
    )
    return [
        snippets.Snippet("curl", "shell", curl),
        snippets.Snippet("Python", "python", python),
        snippets.Snippet("JavaScript", "javascript", js),
    ]
