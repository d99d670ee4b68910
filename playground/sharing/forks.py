"""Forks of a shared clip or batch: the frozen content and files copied into the viewer's account.

(Conversations and rerank runs fork in views.py.) A forked clip is a finished clip with its own copy of the audio;
a forked batch is a record of the shared batch's requests and results, with no provider batch behind it.
"""

import secrets

from django.utils import timezone

from playground.batches.models import Batch
from playground.connections.models import Connection
from playground.lib import files
from playground.sharing.models import Share
from playground.speech.models import SpeechClip


def model_of(share: Share) -> str:
    """The model a fork continues with (a batch: its first request's)."""
    content = share.content
    if share.kind == Share.CONVERSATION:
        return content["model_id"]
    if share.kind == Share.RERANK:
        return content["run"]["model"]
    if share.kind == Share.SPEECH:
        return content["model"]
    first = next((body for body in content.get("requests") or [] if isinstance(body, dict)), {})
    return str(first.get("model") or "")


def fork_clip(share: Share, user, connection: Connection) -> SpeechClip:
    content = share.content
    status = content["status"] if content["status"] != SpeechClip.STREAMING else SpeechClip.INCOMPLETE
    clip = SpeechClip.objects.create(
        owner=user,
        connection=connection,
        model=content["model"],
        voice=content["voice"] if content["voice"] != "default" else "",
        text=content["text"],
        response_format=content["response_format"],
        sample_rate=content["sample_rate"],
        params=content["params"] or {},
        status=status,
        bytes=content["bytes"],
        trace_id=content["trace_id"],
        finished=timezone.now(),
    )
    audio = share.files.filter(key="audio").first()
    if audio is not None and files.size(audio.file) is not None:
        with files.open_stream(audio.file) as source:
            clip.file = files.save(f"speech/{user.pk}/{clip.pk}-{secrets.token_hex(6)}.{clip.response_format}", source)
        clip.bytes = files.size(clip.file)
        clip.save(update_fields=["file", "bytes"])
    return clip


def fork_batch(share: Share, user, connection: Connection) -> Batch:
    content = share.content
    counts = {"total": content["total"], "completed": content["done"] - content["failed"], "failed": content["failed"]}
    return Batch.objects.create(
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
