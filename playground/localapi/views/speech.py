"""POST /audio/speech (spec 2.9) and the caller's reference voices (2.10).

Speech: checked by engines/speech_request.py, spoken by espeak-ng through engines/tts.py, encoded by
engines/audio.py. With stream true (the default) the audio goes out sentence by sentence in a chunked response: a
thread synthesizes and encodes, a bounded queue hands the bytes to the response, and closing the connection stops
the synthesis (the stream then shows as "cancelled" in GET /debug/streams). Content types: audio/mpeg, audio/ogg
(Opus), audio/wav, audio/pcm.

Voices (shapes beyond the spec's list item are our choice, OpenAI-compatible in spirit):
- GET /audio/voice/list -> `{"results": [{model, customName, text, uri}]}` for the caller's key; three voices
  are seeded on a key's first listing. uri: `speech:<customName>:<12 hex of the key's owner hash>:<16 hex>`.
- POST /uploads/audio/voice, multipart `file` (audio PyAV can decode, <= 10 MB, <= 30 s), `customName`
  (`[a-zA-Z0-9_-]{1,64}`), `text` (the transcript), `model` (`local/tts`) -> `{id, uri, customName}`.
- POST /audio/voice/deletions, JSON `{uri}` -> `{uri, deleted: true}`; an unknown uri (or another key's)
  is a 400 (code 20015) naming the uri, like any invalid parameter.

Faults (`X-Local-Fault`): the status faults answer before any synthesis; `drop-after-<N>` ends a stream after
N audio chunks (recorded as "failed" in /debug/streams).
"""

import asyncio
import io
import logging
import re
import secrets
import threading

import av
from asgiref.sync import sync_to_async
from django.core.files.base import ContentFile
from django.http import HttpResponse, JsonResponse, StreamingHttpResponse

from playground.localapi import ratelimit
from playground.localapi import streams as stream_registry
from playground.localapi.engines import speech_request, tts
from playground.localapi.engines.audio import CONTENT_TYPES
from playground.localapi.http import (
    MB,
    drop_connection,
    endpoint,
    error,
    new_trace_id,
    rate_limited,
    trace_headers,
)
from playground.localapi.models import Voice
from playground.localapi.registry import get_model

logger = logging.getLogger(__name__)
MAX_UPLOAD_BYTES = 10 * 1024 * 1024
MAX_UPLOAD_SECONDS = 30
CUSTOM_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
SEED_VOICES = [
    ("narrator", "The quick brown fox jumps over the lazy dog."),
    ("host", "Welcome back to the show, it is good to have you here."),
    ("guest", "Thanks for having me, I am happy to be on the show."),
]


def _new_uri(owner: str, custom_name: str) -> str:
    return f"speech:{custom_name}:{owner[:12]}:{secrets.token_hex(8)}"


def _voices_of(owner: str):
    return Voice.objects.filter(owner=owner, deleted=False)


async def _seed(owner: str) -> None:
    """A key's first listing creates its starting voices (deleted rows count: they are seeded once)."""
    if await Voice.objects.filter(owner=owner).aexists():
        return
    await Voice.objects.abulk_create(
        [
            Voice(owner=owner, model=tts.MODEL_ID, custom_name=name, text=text, uri=_new_uri(owner, name))
            for name, text in SEED_VOICES
        ]
    )


async def _resolve(owner: str, voice_id: str, field: str) -> tts.VoiceSettings:
    settings = tts.preset(voice_id)
    if settings is not None:
        return settings
    if voice_id.startswith("speech:") and await _voices_of(owner).filter(uri=voice_id).aexists():
        return tts.custom_voice_settings(voice_id)
    raise speech_request.Invalid(
        f"{field}: must be one of {', '.join(tts.PRESET_IDS)} or the uri of one of your voices"
    )


def _speech_stream(request, owner: str, job: tts.SpeechJob, fault, trace_id: str):
    record = stream_registry.start(trace_id, tts.MODEL_ID, owner)
    drop_after = fault.drop_after if fault else None

    async def body():
        status = "failed"
        # An empty first part sends the status and headers at once (daphne writes them with the first body
        # part): a relay knows the request was accepted while the first sentence is still being synthesized.
        yield b""
        try:
            chunks = tts.in_thread(lambda cancelled: tts.encoded_chunks(job, stream=True, cancelled=cancelled))
            async for chunk in chunks:
                if drop_after is not None and record.chunks_sent >= drop_after:
                    await chunks.aclose()
                    await drop_connection(request)
                    return
                yield chunk
                record.chunks_sent += 1
            status = "completed"
        except (asyncio.CancelledError, GeneratorExit):
            status = "cancelled"
            raise
        except Exception:
            # Headers are gone already: end the body (daphne would otherwise keep the connection hanging).
            logger.exception("speech stream %s failed", trace_id)
        finally:
            stream_registry.finish(record, status)

    return StreamingHttpResponse(body(), content_type=CONTENT_TYPES[job.response_format])


@endpoint("POST", json_body=True, faults="stream", max_body=2 * MB)
async def speech(request, owner, body, fault):
    try:
        params = speech_request.parse(body, get_model(body.get("model")))
        fields = ["voice"] if len(params.voices) == 1 else ["references[0].audio", "references[1].audio"]
        voices = [await _resolve(owner, v, f) for v, f in zip(params.voices, fields, strict=True)]
    except speech_request.Invalid as exc:
        return error(400, str(exc), code=exc.code)
    limited = ratelimit.check(owner, params.input_tokens)
    if limited:
        return rate_limited(*limited)
    job = speech_request.job_for(params, voices)
    trace_id = new_trace_id()
    if params.stream:
        return trace_headers(_speech_stream(request, owner, job, fault, trace_id), trace_id)
    cancelled = threading.Event()
    try:
        audio = await asyncio.to_thread(tts.render, job, cancelled)
    except asyncio.CancelledError:
        cancelled.set()  # the client went away: stop synthesizing
        raise
    return trace_headers(HttpResponse(audio, content_type=CONTENT_TYPES[job.response_format]), trace_id)


@endpoint("GET")
async def voice_list(request, owner):
    await _seed(owner)
    results = [voice.as_dict() async for voice in _voices_of(owner).order_by("created", "id")]
    return trace_headers(JsonResponse({"results": results}))


def _audio_seconds(data: bytes) -> float:
    """The duration of an audio file, decoding it whole; raises ValueError when it is not decodable audio."""
    try:
        with av.open(io.BytesIO(data)) as container:
            if not container.streams.audio:
                raise ValueError("no audio stream")
            samples, rate = 0, 0
            for frame in container.decode(audio=0):
                samples += frame.samples
                rate = frame.sample_rate
                if rate and samples / rate > MAX_UPLOAD_SECONDS:
                    break
    except av.FFmpegError as exc:
        raise ValueError(str(exc)) from exc
    if not samples:
        raise ValueError("no audio samples")
    return samples / rate


def _save_voice(voice: Voice, filename: str, data: bytes) -> None:
    """The file, then the row; a row that cannot be saved takes its file with it (no orphan files)."""
    voice.audio.save(filename, ContentFile(data), save=False)
    try:
        voice.save()
    except Exception:
        voice.audio.delete(save=False)
        raise


@endpoint("POST", faults="status", max_body=11 * MB)
async def voice_upload(request, owner):
    upload = request.FILES.get("file")
    custom_name = request.POST.get("customName", "")
    text = request.POST.get("text", "")
    model = request.POST.get("model", "")
    if model != tts.MODEL_ID:
        return error(400, f"model: must be {tts.MODEL_ID} (got {model!r})", code=speech_request.UNKNOWN_MODEL)
    if not CUSTOM_NAME.fullmatch(custom_name):
        return error(400, "customName: 1 to 64 characters among a-z, A-Z, 0-9, underscore and dash")
    if not text.strip():
        return error(400, "text: required, the transcript of the reference audio")
    if "\x00" in text:
        return error(400, "text: NUL characters (\\u0000) are not allowed")
    if upload is None:
        return error(400, "file: required, an audio file (multipart field 'file')")
    if upload.size > MAX_UPLOAD_BYTES:
        return error(400, f"file: at most {MAX_UPLOAD_BYTES} bytes (10 MB; got {upload.size})")
    data = await asyncio.to_thread(upload.read)
    try:
        seconds = await asyncio.to_thread(_audio_seconds, data)
    except ValueError as exc:
        return error(400, f"file: not a decodable audio file ({exc})")
    if seconds > MAX_UPLOAD_SECONDS:
        return error(400, f"file: at most {MAX_UPLOAD_SECONDS} seconds of audio")
    uri = _new_uri(owner, custom_name)
    voice = Voice(owner=owner, model=model, custom_name=custom_name, text=text, uri=uri)
    await sync_to_async(_save_voice)(voice, f"{uri.rsplit(':', 1)[1]}-{upload.name or 'voice'}", data)
    return trace_headers(JsonResponse({"id": uri.rsplit(":", 1)[1], "uri": uri, "customName": custom_name}))


@endpoint("POST", json_body=True)
async def voice_delete(request, owner, body):
    uri = body.get("uri")
    if not isinstance(uri, str) or not uri:
        return error(400, "uri: required, the uri of one of your voices")
    voice = await _voices_of(owner).filter(uri=uri).afirst()
    if voice is None:
        return error(400, f"uri: no voice {uri!r} for this key")
    if voice.audio:
        await sync_to_async(voice.audio.delete)(save=False)
    voice.deleted = True
    await voice.asave(update_fields=["deleted", "audio"])
    return trace_headers(JsonResponse({"uri": uri, "deleted": True}))
