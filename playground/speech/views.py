from urllib.parse import urlsplit

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import aget_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST, require_safe
from django_htmx.http import reswap, retarget

from playground import inputs
from playground.catalog.params import DEFAULT_SAMPLE_RATE, SAMPLE_RATES, SPEECH_INPUT_LIMIT
from playground.connections.models import Connection
from playground.lib import downloads, files
from playground.sharing.snippets import base_url_for
from playground.speech import services
from playground.speech.audio import wav_header
from playground.speech.forms import PREVIEW_TEXT, SpeechForm, VoicePicker, VoiceUploadForm
from playground.speech.models import SpeechClip, aget_clip, get_clip
from playground.speech.sharing import voice_upload_snippets
from playground.upstream.errors import UpstreamError


async def _voices_for(form) -> tuple[list[dict], UpstreamError | None]:
    connection = form.chosen_connection
    if connection is None:
        return [], None
    try:
        return await services.list_voices(connection, form.user), None
    except UpstreamError as error:
        # A provider without custom voices (an OpenAI-style one) has no voice list: that is not a failure.
        return [], None if error.status in (404, 405) else error


async def _form(request, data=None, initial=None, *, voices=True) -> tuple[SpeechForm, UpstreamError | None]:
    """The speech form with the chosen connection's custom voices (listed by the provider), unless `voices` is
    False: the list only matters to show the form (custom voices are checked by the provider)."""
    form = await sync_to_async(SpeechForm)(data, user=await request.auser(), initial=initial)
    error = None
    if voices:
        form.custom_voices, error = await _voices_for(form)
    return form, error


async def _with_voices(form) -> UpstreamError | None:
    form.custom_voices, error = await _voices_for(form)
    return error


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


@sync_to_async
def _render(request, template, form, voices_error=None, **extra) -> HttpResponse:
    return render(request, template, _context(request, form, voices_error, **extra))


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
async def index(request):
    initial = {key: request.GET[key] for key in ("connection", "model", "voice") if request.GET.get(key)}
    if request.GET.get("reuse"):
        initial = _initial_from(await aget_clip(request, inputs.object_id(request.GET["reuse"])))
    form, voices_error = await _form(request, initial=initial)
    return await _render(request, "speech/index.html", form, voices_error)


@require_GET
async def clip_detail(request, pk):
    clip = await aget_clip(request, pk)
    form, voices_error = await _form(request, initial=_initial_from(clip))
    return await _render(request, "speech/index.html", form, voices_error, clip=clip)


@require_GET
async def fields(request):
    """The model and voice pickers for the chosen connection (htmx)."""
    form, voices_error = await _form(request, initial={k: request.GET.get(k) for k in ("connection", "model")})
    context = {"form": form, "voices_error": voices_error}
    return await sync_to_async(render)(request, "speech/index.html#voice-fields", context)


@require_POST
async def create(request):
    """Start a clip and answer with the player, whose source is the clip's live stream."""
    user = await request.auser()
    # The provider's voice list is fetched only to show the form again: a valid clip starts without it.
    form, _ = await _form(request, data=request.POST, voices=False)
    if not await sync_to_async(form.is_valid)():
        voices_error = await _with_voices(form)
        response = await _render(request, "speech/index.html#speech-form", form, voices_error)
        return reswap(retarget(response, "#speech-form"), "outerHTML") if request.htmx else response
    try:
        clip = await services.start_clip(owner=user, **form.clip_fields())
    except UpstreamError as error:
        template = "speech/index.html#result" if request.htmx else "speech/index.html"
        return await _render(request, template, form, await _with_voices(form), error=error)
    if not request.htmx:
        return redirect("speech:clip", clip.pk)
    context = await sync_to_async(_context)(request, form, None, clip=clip)  # the player and the list: no voices
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
    html = render_to_string("speech/_clip_status.html", {"clip": clip}, request)
    if not clip.streaming and _on_clip_list(request):
        # The clip's row in the list gets its Download and Share too (out of band), without a reload.
        html += render_to_string("speech/index.html#clip-item", {"item": clip, "item_oob": True}, request)
    return HttpResponse(html)


def _on_clip_list(request) -> bool:
    """Whether the page asking shows the list of clips (the speech page; a voice's preview on the voices page does
    not, and an out-of-band row there would have no place to go)."""
    current = request.htmx.current_url if request.htmx else None
    return current is None or urlsplit(current).path == reverse("speech:index")


@require_safe
def download(request, pk, variant=""):
    """The saved file; `wav` of a pcm clip adds a WAV header built from its sample rate."""
    clip = get_clip(request, pk)
    if clip.streaming:
        return HttpResponse(
            "The clip is still arriving: download it once it is complete.", status=409, content_type="text/plain"
        )
    as_wav = variant == "wav" and clip.response_format == "pcm"
    size = files.size(clip.file)
    if size is None:
        return HttpResponse("The audio file of this clip is missing.", status=410, content_type="text/plain")
    return downloads.serve_file(
        request,
        lambda: files.open_stream(clip.file),
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


async def _picker(request, source) -> VoicePicker:
    """The connection and speech model of a voices request; another user's connection is a 404."""
    user = await request.auser()
    connection = None
    if source.get("connection"):
        connection = await aget_object_or_404(
            Connection.objects.for_user(user), pk=inputs.object_id(source["connection"])
        )
    picker = await sync_to_async(VoicePicker)(
        user=user, initial={"connection": connection, "model": source.get("model")}
    )
    if request.method == "POST" and picker.chosen_connection is None:
        raise Http404("No connection to manage voices on.")
    return picker


async def _voices_page(request, picker, upload_form=None, error=None):
    voices, list_error = await _voices_for(picker)
    context = {
        "form": picker,
        "connection": picker.chosen_connection,
        "voices": voices,
        "error": error or list_error,
        "upload_form": upload_form or VoiceUploadForm(),
    }
    template = "speech/voices.html#voices-page" if request.htmx else "speech/voices.html"
    return await sync_to_async(render)(request, template, context)


def _back_to_voices(picker) -> HttpResponse:
    query = urlencode({"connection": picker.chosen_connection.pk, "model": picker["model"].value() or ""})
    return redirect(f"{reverse('speech:voices')}?{query}")


@require_GET
async def voices(request):
    return await _voices_page(request, await _picker(request, request.GET))


@require_POST
async def voice_upload(request):
    picker = await _picker(request, request.POST)
    form = VoiceUploadForm(request.POST, request.FILES)
    if not await sync_to_async(form.is_valid)():
        return await _voices_page(request, picker, upload_form=form)
    audio = form.cleaned_data["audio"]
    try:
        created = await services.upload_voice(
            picker.chosen_connection,
            picker.user,
            audio=audio.read(),
            filename=audio.name,
            custom_name=form.cleaned_data["custom_name"],
            text=form.cleaned_data["text"],
            model=picker.chosen_model.model_id if picker.chosen_model else "",
        )
    except UpstreamError as error:
        return await _voices_page(request, picker, upload_form=form, error=error)
    messages.success(request, f"Voice {created.get('customName') or form.cleaned_data['custom_name']} created.")
    return _back_to_voices(picker)


@require_POST
async def voice_delete(request):
    picker = await _picker(request, request.POST)
    try:
        await services.delete_voice(picker.chosen_connection, picker.user, request.POST.get("uri", ""))
    except UpstreamError as error:
        return await _voices_page(request, picker, error=error)
    messages.success(request, "Voice deleted.")
    return _back_to_voices(picker)


@require_POST
async def voice_preview(request):
    """Synthesize a short sample with a custom voice; answers with a player (htmx) or the clip's page."""
    picker = await _picker(request, request.POST)
    if picker.chosen_model is None:
        error = UpstreamError(kind="http", status=400, message="This connection has no speech model.")
        return await sync_to_async(render)(request, "kit/_error.html", {"error": error})
    try:
        clip = await services.start_clip(
            owner=await request.auser(),
            connection=picker.chosen_connection,
            model=picker.chosen_model.model_id,
            text=PREVIEW_TEXT,
            voice=request.POST.get("uri", ""),
            response_format="mp3",
            sample_rate=44100,
        )
    except UpstreamError as error:
        return await sync_to_async(render)(request, "kit/_error.html", {"error": error})
    if not request.htmx:
        return redirect("speech:clip", clip.pk)
    return await sync_to_async(render)(request, "speech/_player.html", {"clip": clip, "compact": True})


@require_GET
def voice_code(request):
    """The upload of a voice as curl, Python and JavaScript, for one of the user's connections."""
    connections = list(Connection.objects.for_user(request.user))
    chosen = next((c for c in connections if str(c.pk) == request.GET.get("connection")), None)
    connection = chosen or (connections[0] if connections else None)
    model = request.GET.get("model") or "local/tts"
    generated = voice_upload_snippets(
        base_url_for(request, connection),
        model=model[:200],
        custom_name="myvoice",
        text="The words spoken in voice.wav.",
    )
    notes = ["Run it beside voice.wav, a short recording of the voice, and put its transcript in text."]
    context = {"title": "Upload a voice", "snippets": generated, "notes": notes, "back": reverse("speech:voices")}
    return render(request, "sharing/code.html", context)
