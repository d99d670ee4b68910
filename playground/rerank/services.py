import dataclasses

from playground.catalog.models import CatalogModel
from playground.catalog.params import RERANK_PARAMS, params_for
from playground.connections import gate, ledger
from playground.rerank.models import RerankRun
from playground.upstream import client
from playground.upstream.errors import UpstreamError


def request_body(*, model: str, query: str, documents: list[str], params: dict) -> dict:
    return {"model": model, "query": query, "documents": documents, **params}


async def call(*, ticket: gate.Pass, body: dict, headers: dict | None = None) -> client.Result:
    endpoint = ticket.endpoint
    if headers:
        endpoint = dataclasses.replace(endpoint, headers=(*endpoint.headers, *headers.items()))
    result = await client.rerank(endpoint, body)
    data = result.data
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise UpstreamError(
            kind="stream", message="The provider's rerank answer has no results list.", trace_id=result.trace_id
        )
    return result


async def create_run(
    *,
    owner,
    connection,
    model: str,
    query: str,
    documents: list[str],
    params: dict,
    compared_to: RerankRun | None = None,
    headers: dict | None = None,
) -> RerankRun:
    """Call the provider and save the run; an UpstreamError propagates and nothing is saved."""
    body = request_body(model=model, query=query, documents=documents, params=params)
    async with gate.opened(connection, owner, "rerank", body=body) as ticket:
        try:
            result = await call(ticket=ticket, body=body, headers=headers)
        except UpstreamError as error:
            await ticket.asettle(model=model, documents=len(documents), status=f"error {error.status or error.kind}")
            raise
        meta = result.data.get("meta") or {}
        await ticket.asettle(model=model, usage=ledger.rerank_usage(meta), documents=len(documents))
    return await RerankRun.objects.acreate(
        owner=owner,
        connection=connection,
        model=model,
        query=query,
        documents=documents,
        params=params,
        results=result.data["results"],
        meta=result.data.get("meta") or {},
        trace_id=result.trace_id,
        compared_to=compared_to,
    )


async def compare(*, run: RerankRun, model: CatalogModel) -> RerankRun:
    """Run another model on the same query and documents, keeping the parameters it supports."""
    supported = {param.name for param in params_for(model, RERANK_PARAMS)}
    params = {name: value for name, value in run.params.items() if name in supported}
    return await create_run(
        owner=run.owner,
        connection=run.connection,
        model=model.model_id,
        query=run.query,
        documents=run.documents,
        params=params,
        compared_to=run,
    )


def rank_changes(base: RerankRun, other: RerankRun) -> list[dict]:
    """`other`'s rows, each with how far it moved from its rank in `base` (positive = moved up)."""
    base_ranks = {row["index"]: row["rank"] for row in base.ranked()}
    rows = []
    for row in other.ranked():
        before = base_ranks.get(row["index"])
        change = None if before is None else before - row["rank"]
        rows.append({**row, "before": before, "change": change, "moved": abs(change or 0)})
    return rows
