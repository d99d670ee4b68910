"""A rerank run (with the run it was compared to) as a kind of share."""

import json

from django.urls import reverse

from playground.rerank import services
from playground.rerank.models import RerankRun, get_run
from playground.sharing import snippets
from playground.sharing.kinds import Kind


class RerankKind(Kind):
    name, label, plural = "rerank", "Rerank run", "Rerank runs"
    model, template = "rerank.RerankRun", "rerank/shared.html"

    def get(self, request, pk):
        return get_run(request, pk)

    def title(self, item):
        return f"Rerank: {item.query[:80]}"

    def url(self, item):
        return reverse("rerank:detail", args=[item.pk])

    def freeze(self, item, files):
        content = {"run": run_dict(item), "compared": None, "changes": []}
        # A run made by "Compare" shows beside the run it was compared to: an A/B comparison.
        if item.compared_to_id and item.compared_to.owner_id == item.owner_id:
            content["compared"] = run_dict(item.compared_to)
            content["changes"] = services.rank_changes(item.compared_to, item)
        return content

    def describe(self, content):
        run = content["run"]
        other = f" compared with {content['compared']['model']}" if content.get("compared") else ""
        return f"{run['model']} ranked {len(run['documents'])} documents{other}."

    def show(self, share, content, request):
        for run in filter(None, [content.get("run"), content.get("compared")]):
            run["request_json"] = json.dumps(run["request"], indent=2, ensure_ascii=False)
        return content

    def model_of(self, content):
        return content["run"]["model"]

    def fork(self, share, user, connection, offered):
        run = share.content["run"]
        results = [{"index": row["index"], "relevance_score": row["score"]} for row in run["rows"]]
        copy = RerankRun.objects.create(
            owner=user,
            connection=connection,
            model=run["model"],
            query=run["query"],
            documents=run["documents"],
            params=run["params"],
            results=results,
            meta={"tokens": run["tokens"], "billed_units": run["billed_units"]},
            trace_id=run["trace_id"],
        )
        return reverse("rerank:detail", args=[copy.pk])

    def code(self, item, base_url):
        body = services.request_body(model=item.model, query=item.query, documents=item.documents, params=item.params)
        return rerank_snippets(base_url, body), []


def run_dict(run: RerankRun) -> dict:
    return {
        "id": run.pk,
        "model": run.model,
        "query": run.query,
        "documents": run.documents,
        "params": run.params,
        "rows": run.ranked(),
        "tokens": run.tokens,
        "billed_units": run.billed_units,
        "trace_id": run.trace_id,
        "created": run.created.isoformat(),
        "request": services.request_body(model=run.model, query=run.query, documents=run.documents, params=run.params),
    }


def rerank_snippets(base_url: str, body: dict) -> list[snippets.Snippet]:
    url = snippets.endpoint(base_url, "rerank")
    python = (
        snippets.HTTPX_HEAD + f"body = {snippets.py(body, 0)}\n"
        f"response = httpx.post({url!r}, headers=headers, json=body, timeout=120)\n"
        "response.raise_for_status()\n"
        'for item in response.json()["results"]:\n'
        '    print(item["index"], item["relevance_score"])\n'
    )
    js = snippets.js(url, body) + (
        "const data = await response.json();\n"
        "for (const item of data.results) console.log(item.index, item.relevance_score);\n"
    )
    return [
        snippets.Snippet("curl", "shell", snippets.curl_json(url, body)),
        snippets.Snippet("Python", "python", python),
        snippets.Snippet("JavaScript", "javascript", js),
    ]
