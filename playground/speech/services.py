"""Speech clips: the upstream relay that writes a clip to its file as the bytes arrive, and the readers.

The relay is a background job (playground/lib/detached.py) started before the clip's row is written (the provider
works while it is), so the clip is generated and saved even if the browser goes away; the page's player reads the
growing file through `tail()`. Nothing holds more than one chunk of audio in memory. Relays are tracked per
process to wake the readers of a clip as soon as bytes land; a reader in another process polls the file and the
clip's status instead. A clip whose process died is ended as incomplete by the heartbeat sweep (`sweep`),
whichever process runs it.
"""

import asyncio
import dataclasses
import logging
import secrets
import time
from collections.abc import AsyncIterator

from django.utils import timezone

from playground.connections import gate
from playground.lib import detached, drain, files, metrics
from playground.speech.audio import settle_wav, wav_header
from playground.speech.models import SpeechClip
from playground.upstream import client
from playground.upstream.errors import UpstreamError

log = logging.getLogger(__name__)

READ_SIZE = 64 * 1024
POLL_SECONDS = 0.25
KIND = "speech"  # relays in the background-work registry, keyed by clip pk
INTERRUPTED = {
    "title": "Interrupted",
    "message": "The server stopped before the clip was complete.",
    "next_step": "Generate the clip again.",
}


class Relay:
    """The live side of one clip in this process: readers wait on `changed()` for new bytes or the end."""

    def __init__(self):
        self._event = asyncio.Event()
        self.task: asyncio.Task | None = None
        self.loop = asyncio.get_running_loop()

    def notify(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    def waiter(self) -> asyncio.Event:
        return self._event

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()


def _relay_of(pk: int) -> Relay | None:
    return detached.get(KIND, pk)


def beat(live: list) -> None:
    SpeechClip.objects.filter(pk__in=live, status=SpeechClip.STREAMING).update(heartbeat=timezone.now())


def sweep(cutoff, live: list) -> int:
    """End the clips nobody stamped since `cutoff` (their process died) as incomplete, with the bytes saved."""
    ended = 0
    for clip in SpeechClip.objects.filter(status=SpeechClip.STREAMING, heartbeat__lt=cutoff).exclude(pk__in=live):
        size = files.size(clip.file) or 0
        ended += SpeechClip.objects.filter(pk=clip.pk, status=SpeechClip.STREAMING).update(
            status=SpeechClip.INCOMPLETE, error=INTERRUPTED, finished=timezone.now(), bytes=size
        )
    return ended


def request_body(clip: SpeechClip) -> dict:
    body = {
        "model": clip.model,
        "input": clip.text,
        "response_format": clip.response_format,
        "sample_rate": clip.sample_rate,
        **clip.params,
    }
    if clip.references:
        body["references"] = clip.references
    elif clip.voice:
        body["voice"] = clip.voice
    return body


async def start_clip(
    *,
    owner,
    connection,
    model: str,
    text: str,
    voice: str = "",
    references: list[dict] | None = None,
    response_format: str = "mp3",
    sample_rate: int = 44100,
    params: dict | None = None,
    headers: dict | None = None,
) -> SpeechClip:
    """Start the upstream request, then create the clip while the provider works; returns once the provider
    accepted the request. The relay writes nothing before the row exists (the first bytes wait in the socket).

    An error before the first byte (400, 401, 429...) raises UpstreamError and leaves no clip behind.
    """
    if drain.draining():  # after a SIGTERM no new clip starts here (lib/drain.py)
        raise UpstreamError(kind="http", status=503, message=drain.REFUSAL)
    ticket = await gate.aopen(connection, owner, "speech")
    clip = SpeechClip(
        owner=owner,
        connection=connection,
        model=model,
        text=text,
        voice=voice if not references else "",
        references=references or [],
        response_format=response_format,
        sample_rate=sample_rate,
        params=params or {},
    )
    endpoint = ticket.endpoint
    if headers:
        endpoint = dataclasses.replace(endpoint, headers=(*endpoint.headers, *headers.items()))
    loop = asyncio.get_running_loop()
    started: asyncio.Future = loop.create_future()
    saved: asyncio.Future = loop.create_future()
    relay = Relay()
    relay.task = detached.spawn(_relay(clip, endpoint, relay, started, saved, ticket), name="speech-clip")
    try:
        await clip.asave()
        clip.file = f"speech/{owner.pk}/{clip.pk}-{secrets.token_hex(6)}.{response_format}"
        await clip.asave(update_fields=["file"])
    except BaseException as exc:
        saved.set_exception(exc)
        relay.task.cancel()
        await asyncio.shield(ticket.arelease())
        raise
    if not relay.task.done():  # (one refused at once has nothing to track)
        detached.track(KIND, clip.pk, relay)
    relay.task.set_name(f"speech-clip-{clip.pk}")
    saved.set_result(None)
    try:
        await started
    except UpstreamError:
        await clip.adelete()
        raise
    return clip


async def _relay(
    clip: SpeechClip,
    endpoint,
    relay: Relay,
    started: asyncio.Future,
    saved: asyncio.Future | None = None,
    ticket: gate.Pass | None = None,
) -> None:
    status, error, output, spool = SpeechClip.INCOMPLETE, None, None, None
    began = time.monotonic()
    try:
        async with client.speech_stream(endpoint, request_body(clip)) as response:
            clip.trace_id = client.trace_id_of(response.headers)
            if saved is not None:
                await asyncio.shield(saved)
            # Written to a local spool as it arrives, stored when it ends (lib/files.py; on the local disk, in place).
            spool = await asyncio.to_thread(files.Spool, clip.file)
            output = await asyncio.to_thread(open, spool.path, "wb", buffering=0)
            started.set_result(None)
            async for chunk in client.iter_bytes(response):
                await asyncio.to_thread(output.write, chunk)
                clip.bytes += len(chunk)
                relay.notify()
        status = SpeechClip.COMPLETE
    except UpstreamError as exc:
        if not started.done():
            started.set_exception(exc)
            return
        error = exc.as_dict()
    except asyncio.CancelledError:
        error = INTERRUPTED
        raise
    except Exception as exc:
        if saved is not None and saved.done() and not saved.cancelled() and saved.exception() is exc:
            return  # the row could not be saved: start_clip raises it
        log.exception("speech relay of clip %s failed", clip.pk)
        if not started.done():
            started.set_exception(UpstreamError(kind="stream", message=str(exc)))
            return
        error = {"title": "The clip could not be saved", "message": str(exc), "next_step": "Retry."}
    finally:
        try:
            if output is not None:
                await asyncio.to_thread(output.close)
                if status == SpeechClip.COMPLETE and clip.response_format == "wav":
                    # Streamed with unknown sizes: the finished file gets its true header (Range still works).
                    await asyncio.to_thread(settle_wav, spool.path)
            if not started.done():
                started.set_exception(UpstreamError(kind="stream", message="The request was stopped."))
            if not started.cancelled() and started.exception() is None:
                status, error = await asyncio.shield(_publish(spool, status, error))
                clip.status, clip.error, clip.finished = status, error, timezone.now()
                # A clip deleted while streaming updates no row: there is nothing left to record, nor to keep
                # (delete_clip deletes the row before the file, so one of the two removes what was stored).
                updated = await asyncio.shield(
                    SpeechClip.objects.filter(pk=clip.pk).aupdate(
                        status=status, error=error, finished=clip.finished, bytes=clip.bytes, trace_id=clip.trace_id
                    )
                )
                if not updated and spool is not None:
                    await asyncio.to_thread(spool.discard)
                await asyncio.shield(record_usage(clip, status, ticket))
            elif spool is not None:
                await asyncio.to_thread(spool.discard)
        finally:
            if ticket is not None:
                await asyncio.shield(ticket.arelease())  # refused before the first byte: nothing to file
            if clip.pk is not None:
                detached.untrack(KIND, clip.pk, relay)
                metrics.generation_ended(
                    KIND,
                    key=clip.pk,
                    status=status,
                    trace_id=clip.trace_id,
                    model=clip.model,
                    seconds=time.monotonic() - began,
                    bytes=clip.bytes,
                )
            relay.notify()


async def wait(clip: SpeechClip) -> SpeechClip:
    """Wait for the relay of a clip started in this process, then return it refreshed."""
    relay = _relay_of(clip.pk)
    if relay and relay.task:
        await asyncio.wait([relay.task])
    await clip.arefresh_from_db()
    return clip


async def tail(clip: SpeechClip, *, playable: bool = True) -> AsyncIterator[bytes]:
    """The clip's bytes from the start, following the file while it grows, until the clip is finished.

    With `playable`, raw PCM is preceded by a WAV header (of unknown size while growing) so a browser can
    play it; the saved file stays raw.
    """
    if playable and clip.response_format == "pcm":
        yield wav_header(clip.sample_rate, None if clip.streaming else clip.bytes)
    source = None
    try:
        while True:
            relay = _relay_of(clip.pk)
            waiter = relay.waiter() if relay else None
            if source is None:
                source = await _open(clip.file)
            data = await asyncio.to_thread(source.read, READ_SIZE) if source else b""
            if data:
                yield data
                continue
            if relay is not None:
                try:
                    await asyncio.wait_for(waiter.wait(), timeout=1)
                except TimeoutError:
                    pass
                continue
            await clip.arefresh_from_db(fields=["status", "bytes"])
            if not clip.streaming:
                # Drain what was written between the last read and the end (from the storage, when this process
                # never saw the spool of another).
                source = source or await _open(clip.file)
                while source and (data := await asyncio.to_thread(source.read, READ_SIZE)):
                    yield data
                return
            # A clip whose process died is ended by the heartbeat sweep; this reader then sees it finished.
            await asyncio.sleep(POLL_SECONDS)
    finally:
        if source:
            await asyncio.to_thread(source.close)


async def _publish(spool, status: str, error: dict | None) -> tuple[str, dict | None]:
    """Store the clip's spool; a clip that cannot be stored ends incomplete, saying so."""
    if spool is None:
        return status, error
    try:
        await asyncio.to_thread(spool.publish)
    except Exception as exc:
        log.exception("The file of clip %s could not be stored", spool.name)
        failed = {"title": "The clip could not be saved", "message": str(exc), "next_step": "Retry."}
        return SpeechClip.INCOMPLETE, failed
    return status, error


async def _open(name: str):
    """The clip's file: its spool while this process writes it, else the stored file; None when neither exists."""
    spooled = files.spooled(name)
    try:
        if spooled:
            return await asyncio.to_thread(open, spooled, "rb")
        return await asyncio.to_thread(files.open_stream, name)
    except FileNotFoundError:
        return None


def delete_clip(clip: SpeechClip) -> None:
    """Delete the clip and its file, stopping its relay if it is still running in this process."""
    detached.cancel(KIND, clip.pk)
    name = clip.file
    clip.delete()
    # After the row: a relay storing the file meanwhile finds no row and removes it itself.
    files.delete(name)


async def list_voices(connection, user) -> list[dict]:
    """The caller's custom voices from the provider's /audio/voice/list (UpstreamError on failure)."""
    async with gate.opened(connection, user, "voices") as ticket:
        result = await client.voices(ticket.endpoint)
    items = result.data.get("results") if isinstance(result.data, dict) else None
    if not isinstance(items, list):
        raise UpstreamError(
            kind="stream", message="The provider's voice list has no results.", trace_id=result.trace_id
        )
    return [
        {
            "model": str(v.get("model", "")),
            "name": str(v.get("customName", "")),
            "text": str(v.get("text", "")),
            "uri": str(v.get("uri", "")),
        }
        for v in items
        if isinstance(v, dict) and v.get("uri")
    ]


TEAM_VOICES = "The custom voices of a team connection are not changed from here: use a connection of your own."


async def upload_voice(
    connection, user, *, audio: bytes, filename: str, custom_name: str, text: str, model: str
) -> dict:
    if connection.team_id:
        raise UpstreamError(kind="http", status=403, message=TEAM_VOICES)
    async with gate.opened(connection, user, "voices") as ticket:
        result = await client.voice_upload(
            ticket.endpoint, audio=audio, filename=filename, custom_name=custom_name, text=text, model=model
        )
    return result.data if isinstance(result.data, dict) else {}


async def delete_voice(connection, user, uri: str) -> None:
    if connection.team_id:
        raise UpstreamError(kind="http", status=403, message=TEAM_VOICES)
    async with gate.opened(connection, user, "voices") as ticket:
        await client.voice_delete(ticket.endpoint, uri)


async def record_usage(clip: SpeechClip, status: str, ticket: gate.Pass | None) -> None:
    """Settle the clip's pass: a clip made through a team connection is filed with its input's characters."""
    if ticket is None:
        return
    try:
        await ticket.asettle(model=clip.model, audio_characters=len(clip.text), status=status)
    except Exception:
        log.exception("Could not record the usage of speech clip %s", clip.pk)
