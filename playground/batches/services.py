"""Submitting batches to a provider, following them, and reading their results.

Input files are JSONL in the OpenAI batch convention, one chat request per line:
`{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body": {...}}`.
"""

import json
import re
from dataclasses import dataclass

from asgiref.sync import sync_to_async
from django.db import transaction

from playground import inputs
from playground.batches.models import Batch
from playground.connections import gate, ledger
from playground.connections.models import Connection
from playground.upstream import client
from playground.upstream.errors import UpstreamError
from playground.upstream.redact import redact_key

ENDPOINT = "/v1/chat/completions"
# How many rows the results page shows; the downloads have them all.
RESULTS_SHOWN = 500


def build_jsonl(*, model: str, prompts: list[str], system: str = "", max_tokens: int | None = None) -> bytes:
    """One chat request per prompt, with custom ids request-1, request-2, …"""
    lines = []
    for number, prompt in enumerate(prompts, start=1):
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        body: dict = {"model": model, "messages": messages}
        if max_tokens:
            body["max_tokens"] = max_tokens
        item = {"custom_id": f"request-{number}", "method": "POST", "url": ENDPOINT, "body": body}
        lines.append(json.dumps(item, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode()


def build_lines(bodies: list[dict]) -> bytes:
    """One request per body, with custom ids row-1, row-2, … (a prompt version's rows of variables)."""
    items = [{"custom_id": f"row-{n}", "method": "POST", "url": ENDPOINT, "body": b} for n, b in enumerate(bodies, 1)]
    return ("\n".join(json.dumps(item, ensure_ascii=False) for item in items) + "\n").encode()


def count_requests(content: bytes) -> int:
    return sum(1 for line in content.splitlines() if line.strip())


async def submit(
    *,
    user,
    connection: Connection,
    filename: str,
    content: bytes,
    completion_window: str,
    metadata: dict[str, str],
    prompt_version=None,
) -> Batch:
    """Upload the input file, create the batch and record it. Raises UpstreamError."""
    # The batch's tokens are filed when it ends (record_usage); its submission reserves the default.
    async with gate.opened(connection, user, "batch") as ticket:
        uploaded = await client.file_upload(ticket.endpoint, filename=filename, content=content, purpose="batch")
        file_id = uploaded.data["id"]
        body = {"input_file_id": file_id, "endpoint": ENDPOINT, "completion_window": completion_window}
        if metadata:
            body["metadata"] = metadata
        created = await client.batch_create(ticket.endpoint, body)
        await ticket.asettle(model=_first_model(content), documents=count_requests(content), status="submitted")
    batch = Batch(
        owner=user,
        connection=connection,
        input_file_id=file_id,
        input_filename=filename,
        request_count=count_requests(content),
        prompt_version=prompt_version,
    )
    batch.apply(created.data)
    await batch.asave()
    return batch


async def resubmit(batch: Batch, user, connection: Connection | None = None) -> Batch:
    """A forked batch's requests sent again as a new batch on `connection` (by default the fork's). Raises
    UpstreamError (the gate's refusal included: nothing was sent)."""
    bodies = [body for body in (batch.copy or {}).get("requests") or [] if isinstance(body, dict)]
    lines = [
        json.dumps({"custom_id": f"request-{n}", "method": "POST", "url": ENDPOINT, "body": body}, ensure_ascii=False)
        for n, body in enumerate(bodies, start=1)
    ]
    return await submit(
        user=user,
        connection=connection or batch.connection,
        filename=batch.input_filename or "requests.jsonl",
        content=("\n".join(lines) + "\n").encode(),
        completion_window=str(batch.data.get("completion_window") or "24h"),
        metadata=batch.metadata or {},
    )


def _first_model(content: bytes) -> str:
    """The model of the batch's first request (for the team's usage page)."""
    try:
        return str(inputs.loads(content.splitlines()[0])["body"]["model"])
    except (IndexError, ValueError, KeyError, TypeError):
        return ""


async def _connection(batch: Batch) -> Connection:
    """The batch's connection, read now unless it came with the batch (async code cannot load it lazily)."""
    if Batch.connection.is_cached(batch):
        return batch.connection
    return await Connection.objects.aget(pk=batch.connection_id)


async def refresh(batch: Batch) -> Batch:
    """Fetch the batch object again (unless the batch is over) and save what changed. Raises UpstreamError."""
    if batch.is_terminal or batch.copy is not None:
        return batch
    # Polling takes a slot of the connection like any request, and waits for one rather than failing.
    async with gate.opened(await _connection(batch), batch.owner_id, "batch poll", tokens=0, wait=True) as ticket:
        result = await client.batch_get(ticket.endpoint, batch.remote_id)
    batch.apply(result.data)
    await batch.asave(update_fields=Batch.SYNCED)
    if batch.is_terminal:
        await record_usage(batch)
    return batch


async def record_usage(batch: Batch) -> None:
    """Teams: a finished batch on a team connection is filed with the usage its output file reports, once."""
    if batch.connection.team_id is None or batch.usage_recorded or batch.copy is not None:
        return
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "completion_tokens_details": {"reasoning_tokens": 0}}
    model = ""
    if batch.output_file_id:
        for item in parse_jsonl(await file_content(batch, batch.output_file_id)):
            response = item.get("response") if isinstance(item.get("response"), dict) else {}
            body = response.get("body") if isinstance(response.get("body"), dict) else {}
            used = body.get("usage") if isinstance(body.get("usage"), dict) else {}
            details = used.get("completion_tokens_details") or {}
            model = model or str(body.get("model") or "")
            usage["prompt_tokens"] += used.get("prompt_tokens") or 0
            usage["completion_tokens"] += used.get("completion_tokens") or 0
            usage["completion_tokens_details"]["reasoning_tokens"] += details.get("reasoning_tokens") or 0
    await _file_once(batch, model, usage)


@sync_to_async
def _file_once(batch: Batch, model: str, usage: dict) -> None:
    """Claim the batch's usage and file it in one transaction: the page and the tracker may both see it finish."""
    with transaction.atomic():
        if Batch.objects.filter(pk=batch.pk, usage_recorded=False).update(usage_recorded=True):
            ledger.record(batch.connection_id, batch.owner_id, "batch", model=model, usage=usage, status=batch.status)
    batch.usage_recorded = True


async def cancel(batch: Batch) -> Batch:
    async with gate.opened(await _connection(batch), batch.owner_id, "batch", tokens=0) as ticket:
        result = await client.batch_cancel(ticket.endpoint, batch.remote_id)
    batch.apply(result.data)
    await batch.asave(update_fields=Batch.SYNCED)
    return batch


async def file_content(batch: Batch, file_id: str) -> bytes:
    """A file of the batch as the provider wrote it, but for the connection's key (some echo it in a row's error):
    the downloads and the evaluation cells read it from here."""
    async with gate.opened(await _connection(batch), batch.owner_id, "batch file", tokens=0, wait=True) as ticket:
        result = await client.file_content(ticket.endpoint, file_id)
    data = result.data
    data = data if isinstance(data, bytes) else json.dumps(data).encode()
    text = data.decode("utf-8", "surrogateescape")
    return redact_key(text, ticket.endpoint.api_key).encode("utf-8", "surrogateescape")


@dataclass
class Row:
    custom_id: str
    prompt: str
    answer: str | None = None
    error: str | None = None
    tokens: int | None = None


async def results(batch: Batch) -> list[Row]:
    """Each request of the batch paired with its answer or its error, in input order."""
    if batch.copy is not None:  # a fork: what was frozen when it was shared
        return copied_rows(batch.copy)
    rows: dict[str, Row] = {}
    for item in parse_jsonl(await file_content(batch, batch.input_file_id)):
        custom_id = str(item.get("custom_id", ""))
        rows[custom_id] = Row(custom_id=custom_id, prompt=prompt_of(item.get("body")))
    for file_id in (batch.output_file_id, batch.error_file_id):
        if not file_id:
            continue
        for item in parse_jsonl(await file_content(batch, file_id)):
            custom_id = str(item.get("custom_id", ""))
            row = rows.setdefault(custom_id, Row(custom_id=custom_id, prompt=""))
            row.answer, row.error, row.tokens = outcome_of(item)
    return list(rows.values())


def copied_rows(copy: dict) -> list[Row]:
    if copy.get("rows"):
        return [
            Row(**{name: row.get(name) for name in ("custom_id", "prompt", "answer", "error", "tokens")})
            for row in copy["rows"]
        ]
    return [
        Row(custom_id=f"request-{n}", prompt=prompt_of(body)) for n, body in enumerate(copy.get("requests") or [], 1)
    ]


def parse_jsonl(content: bytes) -> list[dict]:
    items = []
    for line in content.decode("utf-8", errors="replace").splitlines():
        try:
            item = inputs.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            items.append(item)
    return items


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict) and part.get("text"))
    return ""


def prompt_of(body) -> str:
    """The last user message of a chat request."""
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in reversed(messages if isinstance(messages, list) else []):
        if isinstance(message, dict) and message.get("role") == "user":
            return _text(message.get("content"))
    return ""


def outcome_of(item: dict) -> tuple[str | None, str | None, int | None]:
    """(answer, error, total tokens) of one line of an output or error file."""
    response = item.get("response") if isinstance(item.get("response"), dict) else {}
    body = response.get("body") if isinstance(response.get("body"), dict) else {}
    error = item.get("error")
    status = response.get("status_code")
    if error or (isinstance(status, int) and status >= 400):
        detail = error if isinstance(error, dict) else {"message": error or body.get("message")}
        message = detail.get("message") or detail.get("code")
        return None, str(message or f"HTTP {status}"), None
    choices = body.get("choices") if isinstance(body.get("choices"), list) else []
    message = choices[0].get("message", {}) if choices and isinstance(choices[0], dict) else {}
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    return _text(message.get("content")), None, usage.get("total_tokens")


LINE_PROBLEM = re.compile(r"(?:^|;\s*)(line \d+: .*?)(?=;\s*line \d+:|$)")


def explain(error: UpstreamError) -> dict:
    """An upstream failure in words: what happened, the provider's message, and what to do next.

    A rejected input file's message names its lines ("file: line 2: …; line 5: …"); those become a list.
    """
    shown = error.as_dict()
    problems = LINE_PROBLEM.findall(error.message.removeprefix("file: ")) if error.status == 400 else []
    if problems:
        shown["title"] = "The provider rejected the requests file"
        shown["next_step"] = "Fix the lines listed in the file, then upload it again."
    shown["problems"] = problems
    return shown
