"""What a share shows, frozen as JSON when the link is made or updated, and its files copied under the share.

The frozen content never holds a key, a connection's name or its base URL: only the model id, the parameters,
the system prompt and each request body as it was (or would be) sent.
"""

from asgiref.sync import async_to_sync
from django.db import transaction

from playground.batches import services as batch_services
from playground.batches.models import Batch
from playground.chat import branches
from playground.chat import services as chat_services
from playground.chat.models import Conversation, Message
from playground.evaluate import services as evaluate_services
from playground.evaluate.models import Cell, Evaluation
from playground.lib import files as stored_files
from playground.rerank import services as rerank_services
from playground.rerank.models import RerankRun
from playground.sharing.models import Share, SharedFile, frozen_name
from playground.speech import services as speech_services
from playground.speech.models import SpeechClip
from playground.upstream.errors import UpstreamError

MESSAGE_FIELDS = [
    "role",
    "content",
    "reasoning",
    "status",
    "model_id",
    "params",
    "usage",
    "finish_reason",
    "trace_id",
    "ttft_ms",
    "total_ms",
    "choices",
    "tool_calls",
    "tool_call_id",
]
BATCH_ROWS = 1000  # a batch share shows at most this many requests


class NotShareable(Exception):
    """The source cannot be shared as it is (e.g. a clip still streaming); the message says why."""


def title_of(source) -> str:
    if isinstance(source, Conversation):
        return source.display_title
    if isinstance(source, RerankRun):
        return f"Rerank: {source.query[:80]}"
    if isinstance(source, SpeechClip):
        return f"Speech: {source.text[:80]}"
    if isinstance(source, Evaluation):
        return f"Evaluation: {source.title}"
    return f"Batch {source.input_filename or source.remote_id}"


def kind_of(source) -> str:
    return {
        Conversation: Share.CONVERSATION,
        RerankRun: Share.RERANK,
        SpeechClip: Share.SPEECH,
        Batch: Share.BATCH,
        Evaluation: Share.EVALUATION,
    }[type(source)]


def freeze(share: Share) -> None:
    """Build the share's content from its source now and copy its files (replacing what an earlier freeze made)."""
    source = share.source
    files: list[tuple[str, str, str, str]] = []  # key, stored name of the source, name, content type
    if share.kind == Share.CONVERSATION:
        content = conversation_content(source, files)
    elif share.kind == Share.RERANK:
        content = rerank_content(source)
    elif share.kind == Share.SPEECH:
        content = speech_content(source, files)
    elif share.kind == Share.EVALUATION:
        content = evaluation_content(source)
    else:
        content = batch_content(source)
    share.title = title_of(source)[:200]
    with transaction.atomic():
        share.files.all().delete()
        for key, source_name, name, content_type in files:
            with stored_files.open_stream(source_name) as source:
                stored = stored_files.save(frozen_name(share.pk, name), source)
            SharedFile.objects.create(
                share=share, key=key, file=stored, name=name, content_type=content_type, size=stored_files.size(stored)
            )
        share.content = content
        share.save()


# ---------------------------------------------------------------- conversations


def message_dict(message: Message) -> dict:
    data = {name: getattr(message, name) for name in MESSAGE_FIELDS}
    data["id"] = message.pk
    data["created"] = message.created.isoformat() if message.created else ""
    data["attachments"] = [
        {"key": f"attachment-{a.pk}", "name": a.name, "kind": a.kind, "content_type": a.content_type, "size": a.size}
        for a in message.attachments.all()
    ]
    return data


def turn_request(conversation: Conversation, earlier: list[dict], answer: dict) -> dict:
    """The request body behind an answer: its model and parameters, the system prompt and the turns before it,
    kept by the conversation's context policy. Attachments appear as references to the shared files."""
    turns = [
        (m["role"], m["content"], m["attachments"])
        for m in earlier
        if m["role"] in ("user", "system")
        or (m["role"] == "assistant" and m["content"] and m["status"] not in (Message.ERROR, Message.STREAMING))
    ]
    system = conversation.system_prompt.strip()
    kept = chat_services.apply_policy(turns, conversation.context_policy, chat_services.MAX_MESSAGES - bool(system))
    messages = [{"role": "system", "content": system}] if system else []
    for role, text, attachments in kept:
        if not attachments:
            messages.append({"role": role, "content": text})
            continue
        parts = [{"type": "text", "text": text}]
        for item in attachments:
            part = chat_services.PART_TYPES.get(item["kind"], "image_url")
            parts.append({"type": part, part: {"url": f"data:{item['content_type']};base64,… ({item['name']})"}})
        messages.append({"role": role, "content": parts})
    return {"model": answer["model_id"] or conversation.model_id, "messages": messages, **(answer["params"] or {})}


def conversation_messages(conversation: Conversation, messages=None) -> list[dict]:
    """Every message with its attachments (two queries), each answer with the request that produced it."""
    if messages is None:
        messages = branches.thread(conversation)
    rows = [message_dict(m) for m in messages]
    for index, row in enumerate(rows):
        if row["role"] == "assistant":
            row["request"] = turn_request(conversation, rows[:index], row)
    return rows


def conversation_content(conversation: Conversation, files: list) -> dict:
    # An answer still streaming is left out: a frozen copy would show it "generating" forever.
    # The selected path only (what the owner's thread shows), without an answer still streaming.
    rows = [m for m in branches.thread(conversation) if m.status != Message.STREAMING]
    messages = conversation_messages(conversation, rows)
    for message in rows:
        for a in message.attachments.all():
            files.append((f"attachment-{a.pk}", a.file.name, a.name, a.content_type))
    return {
        "title": conversation.display_title,
        "model_id": conversation.model_id,
        "system_prompt": conversation.system_prompt,
        "params": conversation.params,
        "context_policy": conversation.context_policy,
        "messages": messages,
        "last_message": messages[-1]["id"] if messages else 0,
    }


# ---------------------------------------------------------------- rerank, speech, batches


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
        "request": rerank_services.request_body(
            model=run.model, query=run.query, documents=run.documents, params=run.params
        ),
    }


def rerank_content(run: RerankRun) -> dict:
    content = {"run": run_dict(run), "compared": None, "changes": []}
    # A run made by "Compare" shows beside the run it was compared to: an A/B comparison.
    if run.compared_to_id and run.compared_to.owner_id == run.owner_id:
        content["compared"] = run_dict(run.compared_to)
        content["changes"] = rerank_services.rank_changes(run.compared_to, run)
    return content


def speech_content(clip: SpeechClip, files: list) -> dict:
    if clip.streaming:
        raise NotShareable("This clip is still being synthesized: share it once it is complete.")
    if stored_files.size(clip.file) is not None:
        files.append(("audio", clip.file, clip.download_name(), clip.content_type))
    return {
        "model": clip.model,
        "voice": clip.voice_label,
        "text": clip.text,
        "response_format": clip.response_format,
        "sample_rate": clip.sample_rate,
        "params": clip.params,
        "status": clip.status,
        "bytes": clip.bytes,
        "trace_id": clip.trace_id,
        "created": clip.created.isoformat(),
        "request": speech_services.request_body(clip),
        "playable": clip.response_format != "pcm",
    }


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
        requests = batch_services.parse_jsonl(async_to_sync(batch_services.file_content)(batch, batch.input_file_id))
        content["requests"] = [item.get("body") for item in requests[:BATCH_ROWS]]
        if batch.is_terminal:
            rows = async_to_sync(batch_services.results)(batch)
            content["rows"] = [vars(row) for row in rows[:BATCH_ROWS]]
    except UpstreamError as error:
        content["note"] = f"The provider did not return the batch's files ({error.message}); only its status is shared."
    return content


# ---------------------------------------------------------------- evaluations

CELL_FIELDS = ["status", "output", "error", "grades", "thumb", "note", "prompt_tokens", "completion_tokens"]
CELL_FIELDS += ["ttft_ms", "latency_ms"]


def evaluation_content(evaluation: Evaluation) -> dict:
    """The grid as it is: template, variables, variants, every row (at most MAX_CASES) with its cells, the summary.
    Its connection is left out: only model ids and parameters are shared."""
    variants, rows, cells = evaluate_services.grid(evaluation)
    if any(c.status in Cell.ACTIVE for c in cells):
        raise NotShareable("This evaluation is still running: share it once its cells are finished.")
    latest = evaluation.latest_prompt()

    def prompt(version):
        return {"number": version.number, "system": version.system, "user": version.user} if version else None

    return {
        "title": evaluation.title,
        "prompt": prompt(latest),
        "columns": evaluation.columns,
        "variants": [
            {
                "label": v.label,
                "model": v.model,
                "prompt": prompt(v.prompt) if v.prompt_id else None,
                "params": {k: val for k, val in (v.params or {}).items() if val not in ("", None)},
                "graders": sorted(v.graders or {}),
            }
            for v in variants
        ],
        "rows": [
            {
                "number": case.position + 1,
                "values": case.values,
                "expected": case.expected,
                "cells": [{name: getattr(c, name) for name in CELL_FIELDS} if c else None for c in row],
            }
            for case, row in rows
        ],
        "summaries": [
            {
                "label": s.variant.label,
                "score": s.score,
                **{k: getattr(s, k) for k in ("done", "errors", "graded", "passed", "up", "down")},
                **{k: getattr(s, k) for k in ("latency", "ttft", "tokens")},
            }
            for s in evaluate_services.summaries(variants, cells)
        ],
    }
