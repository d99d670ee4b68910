from playground.catalog.models import CAPABILITIES, KINDS, CatalogModel
from playground.connections.models import Connection
from playground.upstream import client
from playground.upstream.errors import UpstreamError

NUMBERS = ("context_window", "max_output")
# Providers that describe a model by the request parameters and input kinds it accepts (the local API does).
FLAG_FROM_PARAM = {
    "enable_thinking": "thinking",
    "thinking_budget": "thinking_budget",
    "reasoning_effort": "reasoning_effort",
    "min_p": "min_p",
    "tools": "tools",
    "instruction": "rerank_instruction",
    "max_chunks_per_doc": "rerank_chunking",
}
FLAG_FROM_INPUT = {"image": "vision", "audio": "audio", "video": "video", "pdf": "pdf"}


def flags_from_capabilities(caps: dict) -> dict:
    """Catalog flags from a capabilities object: explicit flags, or lists of accepted params and inputs."""
    flags = {name: bool(caps[name]) for name in CAPABILITIES if isinstance(caps.get(name), bool)}
    params, inputs = caps.get("params"), caps.get("inputs")
    if isinstance(params, list):
        for param, flag in FLAG_FROM_PARAM.items():
            flags.setdefault(flag, param in params)
    if isinstance(inputs, list):
        for kind, flag in FLAG_FROM_INPUT.items():
            flags.setdefault(flag, kind in inputs)
    if "base64_images_only" in caps:
        flags.setdefault("base64_only", bool(caps["base64_images_only"]))
    return flags


def entry_fields(item: dict, known: CatalogModel | None) -> dict:
    """Catalog fields from a GET /models item; providers that say nothing of capabilities keep what we know."""
    fields = {"kind": item.get("kind") if item.get("kind") in dict(KINDS) else (known.kind if known else "chat")}
    caps = item.get("capabilities") if isinstance(item.get("capabilities"), dict) else {}
    flags = flags_from_capabilities(caps)
    for name in CAPABILITIES:
        if name in flags:
            fields[name] = flags[name]
        elif known:
            fields[name] = getattr(known, name)
    for name in NUMBERS:
        value = item.get(name, caps.get(name))
        if isinstance(value, int) and value > 0:
            fields[name] = value
        elif known:
            fields[name] = getattr(known, name)
    if known:
        fields.update(label=known.label, description=known.description)
    return fields


async def refresh_models(connection: Connection) -> tuple[str, bool]:
    """Update the connection's catalog from the provider's GET /models (not in the spec: degrade gracefully)."""
    endpoint = await connection.aendpoint()
    try:
        result = await client.models(endpoint)
    except UpstreamError as error:
        if error.status in (404, 405):
            return "This provider does not list its models; the built-in catalog is used.", False
        return f"Could not refresh: {error.title}. {error.next_step}", False
    items = result.data.get("data") if isinstance(result.data, dict) else None
    if not isinstance(items, list):
        return "The provider's model list was not in the expected format; the built-in catalog is used.", False
    scope = "local" if connection.is_local else "hosted"
    seen = []
    async for known in CatalogModel.objects.filter(connection=None, scope=scope):
        seen.append(known)
    known_by_id = {entry.model_id: entry for entry in seen}
    ids = []
    for item in items:
        model_id = item.get("id") if isinstance(item, dict) else None
        if not isinstance(model_id, str) or not model_id:
            continue
        ids.append(model_id)
        await CatalogModel.objects.aupdate_or_create(
            connection=connection,
            model_id=model_id,
            defaults={"scope": "connection", "enabled": True, **entry_fields(item, known_by_id.get(model_id))},
        )
    await CatalogModel.objects.filter(connection=connection).exclude(model_id__in=ids).adelete()
    return f"{len(ids)} models listed by the provider.", True
