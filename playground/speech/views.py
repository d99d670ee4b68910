from asgiref.sync import async_to_sync, sync_to_async
from django.contrib import messages
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST, require_safe
from django_htmx.http import reswap, retarget

from playground.catalog.models import CatalogModel
from playground.catalog.params import DEFAULT_SAMPLE_RATE, SAMPLE_RATES, SPEECH_INPUT_LIMIT
from playground.connections.models import get_connection
from playground.lib import downloads
from playground.speech import services
from playground.speech.audio import wav_header
from playground.speech.forms import PREVIEW_TEXT, SpeechForm, VoiceUploadForm
from playground.speech.models import SpeechClip, aget_clip, get_clip
from playground.upstream.errors import UpstreamError


def _voices_for(connection) -> tuple[list[dict], UpstreamError | None]:
    if connection is None:
        return [], None
    try:
        return async_to_sync(services.list_voices)(connection), None
    except UpstreamError as error:
        # A provider without custom voices (an OpenAI-style one) has no voice list: that is not a failure.
        return [], None if error.status in (404, 405) else error


def _form(request, data=None, initial=None) -> tuple[SpeechForm, UpstreamError | None]:
    probe = SpeechForm(data, user=request.user, initial=initial)
    voices, error = _voices_for(probe.chosen_connection)
    return SpeechForm(data, user=request.user, initial=initial, custom_voices=voices), error


def _context(request, form, voices_error=None, clip=None, error=None) -> dict:
    return {
        "form": form,
        "voices_error": voices_error,
        "clip": clip,
        "error": error,
        "clips": SpeechClip.objects.for_user(request.user)[:30],
        "limit": SPEECH_INPUT_LIMIT,
        "limit_display": f"{SPEECH_INPUT_LIMIT:,}",
        "sample_rates": {fmt: list(rates) for fmt, rates in SAMPLE_RATES.items()},
        "default_rates": DEFAULT_SAMPLE_RATE,
    }


def _initial_from(clip: SpeechClip) -> dict:
    initial = {
        "connection": clip.connection_id,
        "model": clip.model,
        "input": clip.text,
        "voice": clip.voice,
        "params": {"response_format": clip.response_format, "sample_rate": str(clip.sample_rate), **clip.params},
    }
    if clip.references:
        initial["reference_1"] = clip.references[0].get("audio", "")
        initial["reference_2"] = clip.references[1].get("audio", "") if len(clip.references) > 1 else ""
    return initial


@require_GET
def index(request):
    initial = {key: request.GET[key] for key in ("connection", "model", "voice") if request.GET.get(key)}
    if request.GET.get("reuse"):
        initial = _initial_from(get_clip(request, request.GET["reuse"]))
    form, voices_error = _form(request, initial=initial)
    return render(request, "speech/index.html", _context(request, form, voices_error))


@require_GET
def clip_detail(request, pk):
    clip = get_clip(request, pk)
    form, voices_error = _form(request, initial=_initial_from(clip))
    return render(request, "speech/index.html", _context(request, form, voices_error, clip=clip))


@require_GET
def fields(request):
    """The model and voice pickers for the chosen connection (htmx)."""
    form, voices_error = _form(request, initial={k: request.GET.get(k) for k in ("connection", "model")})
    return render(request, "speech/index.html#voice-fields", {"form": form, "voices_error": voices_error})


@require_POST
async def create(request):
    """Start a clip and answer with the player, whose source is the clip's live stream."""
    user = await request.auser()
    form, voices_error = await sync_to_async(_form)(request, data=request.POST)
    if not await sync_to_async(form.is_valid)():
        response = await sync_to_async(render)(
            request, "speech/index.html#speech-form", await sync_to_async(_context)(request, form, voices_error)
        )
        return reswap(retarget(response, "#speech-form"), "outerHTML") if request.htmx else response
    try:
        clip = await services.start_clip(owner=user, **form.clip_fields())
    except UpstreamError as error:
        context = await sync_to_async(_context)(request, form, voices_error, error=error)
        template = "speech/index.html#result" if request.htmx else "speech/index.html"
        return await sync_to_async(render)(request, template, context)
    if not request.htmx:
        return redirect("speech:clip", clip.pk)
    context = await sync_to_async(_context)(request, form, voices_error, clip=clip)
    # The player, and the clip list with the new clip (out of band).
    html = await sync_to_async(render_to_string)("speech/index.html#result", context, request)
    html += await sync_to_async(render_to_string)("speech/index.html#clips", {**context, "oob": True}, request)
    return HttpResponse(html)


@require_GET
async def stream(request, pk):
    """The clip as it arrives (and, once complete, as it is): what the page's player plays."""
    clip = await aget_clip(request, pk)
    content_type = "audio/wav" if clip.response_format == "pcm" else clip.content_type
    response = StreamingHttpResponse(services.tail(clip), content_type=content_type)
    response["Cache-Control"] = "no-store"
    response["X-Accel-Buffering"] = "no"
    return response


@require_GET
def status(request, pk):
    clip = get_clip(request, pk)
    return render(request, "speech/_clip_status.html", {"clip": clip})


@require_safe
def download(request, pk, variant=""):
    """The saved file; `wav` of a pcm clip adds a WAV header built from its sample rate."""
    clip = get_clip(request, pk)
    if clip.streaming:
        return HttpResponse(
            "The clip is still arriving: download it once it is complete.", status=409, content_type="text/plain"
        )
    as_wav = variant == "wav" and clip.response_format == "pcm"
    try:
        size = clip.path.stat().st_size
    except FileNotFoundError:
        return HttpResponse("The audio file of this clip is missing.", status=410, content_type="text/plain")
    return downloads.serve_file(
        request,
        lambda: clip.path.open("rb"),
        prefix=wav_header(clip.sample_rate, size) if as_wav else b"",
        size=size,
        content_type="audio/wav" if as_wav else clip.content_type,
        filename=clip.download_name("wav" if as_wav else None),
        inline=bool(request.GET.get("inline")),
    )


@require_POST
def delete(request, pk):
    services.delete_clip(get_clip(request, pk))
    if request.htmx:
        return HttpResponse("")
    return redirect("speech:index")


# --- voices --------------------------------------------------------------------------------------


def _voices_page(request, connection, upload_form=None, error=None, status=200):
    voices, list_error = _voices_for(connection)
    return render(
        request,
        "speech/voices.html",
        {
            "connection": connection,
            "connections": request.user.connections.all(),
            "voices": voices,
            "error": error or list_error,
            "upload_form": upload_form or VoiceUploadForm(),
            "models": _speech_models(connection),
        },
        status=status,
    )


def _speech_models(connection):
    return list(CatalogModel.objects.for_connection(connection, kind="speech")) if connection else []


def _connection_from(request, source):
    pk = source.get("connection")
    if pk:
        return get_connection(request, pk)
    return request.user.connections.order_by("-is_local", "name").first()


@require_GET
def voices(request):
    return _voices_page(request, _connection_from(request, request.GET))


@require_POST
def voice_upload(request):
    connection = _connection_from(request, request.POST)
    form = VoiceUploadForm(request.POST, request.FILES)
    models = _speech_models(connection)
    model = request.POST.get("model") or (models[0].model_id if models else "")
    if not form.is_valid():
        return _voices_page(request, connection, upload_form=form)
    audio = form.cleaned_data["audio"]
    try:
        created = async_to_sync(services.upload_voice)(
            connection,
            audio=audio.read(),
            filename=audio.name,
            custom_name=form.cleaned_data["custom_name"],
            text=form.cleaned_data["text"],
            model=model,
        )
    except UpstreamError as error:
        return _voices_page(request, connection, upload_form=form, error=error)
    messages.success(request, f"Voice {created.get('customName') or form.cleaned_data['custom_name']} created.")
    return redirect(f"{reverse('speech:voices')}?connection={connection.pk}")


@require_POST
def voice_delete(request):
    connection = _connection_from(request, request.POST)
    uri = request.POST.get("uri", "")
    try:
        async_to_sync(services.delete_voice)(connection, uri)
    except UpstreamError as error:
        return _voices_page(request, connection, error=error)
    messages.success(request, "Voice deleted.")
    return redirect(f"{reverse('speech:voices')}?connection={connection.pk}")


@require_POST
async def voice_preview(request):
    """Synthesize a short sample with a custom voice; answers with a player (htmx) or the clip's page."""
    user = await request.auser()
    connection = await sync_to_async(_connection_from)(request, request.POST)
    models = await sync_to_async(_speech_models)(connection)
    try:
        clip = await services.start_clip(
            owner=user,
            connection=connection,
            model=request.POST.get("model") or models[0].model_id,
            text=PREVIEW_TEXT,
            voice=request.POST.get("uri", ""),
            response_format="mp3",
            sample_rate=44100,
        )
    except (UpstreamError, IndexError) as error:
        if isinstance(error, IndexError):
            error = UpstreamError(kind="http", status=400, message="This connection has no speech model.")
        return await sync_to_async(render)(request, "kit/_error.html", {"error": error})
    if not request.htmx:
        return redirect("speech:clip", clip.pk)
    return await sync_to_async(render)(request, "speech/_player.html", {"clip": clip, "compact": True})
