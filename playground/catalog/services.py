import re

from asgiref.sync import sync_to_async

from playground.catalog.models import CAPABILITIES, CatalogModel
from playground.connections import gate
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
    "top_k": "top_k",
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


# Conservative: only ids that say what they are unmistakably; anything else stays a chat model (editable).
KIND_PATTERNS = [
    ("rerank", re.compile(r"rerank", re.IGNORECASE)),
    ("embedding", re.compile(r"embed|(^|[/_.-])(bge|gte|e5)-", re.IGNORECASE)),
    ("image", re.compile(r"dall-e|flux|stable-diffusion|sdxl|kolors|(^|[/_.-])image([/_.-]|$)", re.IGNORECASE)),
    ("speech", re.compile(r"(^|[/_.-])tts|cosyvoice|moss-ttsd|(^|[/_.-])speech([/_.-]|$)", re.IGNORECASE)),
]
# What OpenAI-compatible providers put in a model's `type` / `object` / `task` fields.
PROVIDER_KINDS = {
    "embedding": "embedding",
    "embeddings": "embedding",
    "text-embedding": "embedding",
    "image": "image",
    "image-generation": "image",
    "text-to-image": "image",
    "rerank": "rerank",
    "reranker": "rerank",
    "tts": "speech",
    "speech": "speech",
    "text-to-speech": "speech",
    "chat": "chat",
    "llm": "chat",
    "text-generation": "chat",
}


def infer_kind(model_id: str, item: dict | None = None, known: CatalogModel | None = None) -> str:
    """A model's kind: what the provider says, else what we know of the id, else its name, else chat."""
    item = item or {}
    for key in ("kind", "type", "task", "model_type"):
        value = item.get(key)
        if isinstance(value, str) and value.lower() in PROVIDER_KINDS:
            return PROVIDER_KINDS[value.lower()]
    if known is not None:
        return known.kind
    for kind, pattern in KIND_PATTERNS:
        if pattern.search(model_id):
            return kind
    return "chat"


def entry_fields(item: dict, known: CatalogModel | None) -> dict:
    """Catalog fields from a GET /models item: what the provider declares, else the facts we know of the id.

    An id nobody describes gets the model defaults: text only, no optional parameter.
    """
    fields = {"kind": infer_kind(str(item.get("id", "")), item, known)}
    caps = item.get("capabilities") if isinstance(item.get("capabilities"), dict) else {}
    flags = flags_from_capabilities(caps)
    blank = CatalogModel()
    for name in CAPABILITIES:
        if name in flags:
            fields[name] = flags[name]
        else:
            fields[name] = getattr(known or blank, name)
    for name in NUMBERS:
        value = item.get(name, caps.get(name))
        if isinstance(value, int) and value > 0:
            fields[name] = value
        else:
            fields[name] = getattr(known or blank, name)
    source = known or blank
    fields.update(
        label=source.label,
        description=source.description or str(item.get("description") or "")[:500],
    )
    return fields


async def refresh_on_add(sender, *, connection: Connection, user, **kwargs) -> tuple[str, bool]:
    """connections.signals.connection_added: a new connection's catalog is what its provider lists."""
    return await refresh_models(connection, user)


async def refresh_models(connection: Connection, user=None) -> tuple[str, bool]:
    """Make the connection's catalog what the provider's GET /models lists (not in the spec: degrade gracefully).

    Listed ids are added or updated (fields the user overrode are kept); ids no longer listed are marked
    unavailable, not deleted, so old conversations keep their model; ids added by hand stay as they are.
    """
    try:
        # As `user` (whoever asked), else as the connection's owner (a refresh right after it was saved).
        requester = user if user is not None else connection.owner_id
        async with gate.opened(connection, requester, "refresh", tokens=0) as ticket:
            result = await client.models(ticket.endpoint)
    except gate.Refused as refusal:
        return f"Could not refresh: {refusal.message}", False
    except UpstreamError as error:
        if error.status in (404, 405):
            return "This provider does not list its models: add the model ids you use by hand below.", False
        return f"Could not refresh: {error.title}. {error.next_step}", False
    items = result.data.get("data") if isinstance(result.data, dict) else None
    if not isinstance(items, list):
        return "The provider's model list was not in the expected format: add the model ids by hand below.", False
    known_by_id = await sync_to_async(CatalogModel.objects.known_facts)(connection)
    existing = {entry.model_id: entry async for entry in CatalogModel.objects.filter(connection=connection)}
    ids = []
    for item in items:
        model_id = item.get("id") if isinstance(item, dict) else None
        if not isinstance(model_id, str) or not model_id or model_id in ids:
            continue
        ids.append(model_id)
        fields = entry_fields(item, known_by_id.get(model_id))
        entry = existing.get(model_id) or CatalogModel(connection=connection, model_id=model_id)
        for name, value in fields.items():
            if name not in (entry.edited or []):
                setattr(entry, name, value)
        entry.scope, entry.enabled, entry.available = "connection", True, True
        await entry.asave()
    gone = await (
        CatalogModel.objects.filter(connection=connection, available=True, added_by_hand=False)
        .exclude(model_id__in=ids)
        .aupdate(available=False)
    )
    message = f"{len(ids)} models listed by the provider."
    if gone:
        message += (
            f" {gone} no longer listed {'are' if gone != 1 else 'is'} marked unavailable (kept for old conversations)."
        )
    return message, True


def add_by_hand(connection: Connection, model_id: str, kind: str = "") -> CatalogModel:
    """Add a model id the provider does not list; known ids get their capability facts."""
    known = CatalogModel.objects.known_facts(connection).get(model_id)
    fields = entry_fields({"id": model_id}, known)
    if kind:
        fields["kind"] = kind
    entry, _ = CatalogModel.objects.update_or_create(
        connection=connection,
        model_id=model_id,
        defaults={**fields, "scope": "connection", "enabled": True, "available": True, "added_by_hand": True},
    )
    return entry


def own_entry(connection: Connection, model: CatalogModel) -> CatalogModel:
    """The connection's own entry for a model: a seeded one is copied first, so an override stays local."""
    if model.connection_id == connection.pk:
        return model
    fields = {f.name: getattr(model, f.name) for f in CatalogModel._meta.concrete_fields if f.name not in ("id",)}
    fields.update(connection=connection, scope="connection", available=True, edited=[])
    entry, _ = CatalogModel.objects.get_or_create(connection=connection, model_id=model.model_id, defaults=fields)
    return entry
