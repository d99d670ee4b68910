"""Speech synthesis for /audio/speech with espeak-ng (GPL-3.0, loaded from the `espeakng-loader` wheel).

espeak-ng keeps global state, so every call runs on ONE worker thread (`_engine`), and the ctypes callback
is kept referenced for the life of the process. It produces 22,050 Hz mono int16 samples; `audio.Encoder`
applies gain, resamples and encodes them.

Voices: eight presets `local/tts:<name>`, each an espeak voice + variant + pitch, and the caller's custom
voices (`speech:<name>:<owner id>:<id>`), which map deterministically from their uri to a variant and a pitch
(the recording itself is only validated and kept, not analysed). Text with CJK characters is spoken with the
Mandarin voice (`cmn`) in the same variant: the model is "bilingual".

Dialogue: `[S1]` / `[S2]` tags switch turns; text before any tag belongs to S1. S1 speaks with the chosen
voice (or the first reference), S2 with a contrasting preset (or the second reference).

Speed 0.25-4 maps to espeak's rate (175 words/min at 1.0). espeak has no rate under 80 words/min, so speeds
below 80/175 also lengthen the pause between words to stretch the speech to roughly the asked duration.
"""

import asyncio
import ctypes
import hashlib
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import espeakng_loader

from playground.localapi.engines.audio import Encoder

MODEL_ID = "local/tts"
SAMPLE_RATE = 22050
BASE_RATE = 175  # words per minute at speed 1
MIN_RATE, MAX_RATE = 80, 700
MAX_SEGMENT_CHARS = 300


@dataclass(frozen=True)
class VoiceSettings:
    variant: str  # espeak variant file name, e.g. "m3", "f2"
    pitch: int  # 0-100, espeak default 50
    language: str = "en-us"

    @property
    def female(self) -> bool:
        return self.variant.startswith("f")


PRESETS: dict[str, VoiceSettings] = {
    "alex": VoiceSettings("m3", 45),
    "anna": VoiceSettings("f2", 62, "en-gb"),
    "bella": VoiceSettings("f4", 70),
    "benjamin": VoiceSettings("m1", 32, "en-gb"),
    "charles": VoiceSettings("m7", 25, "en-gb"),
    "claire": VoiceSettings("f3", 58, "en-gb"),
    "david": VoiceSettings("m2", 40),
    "diana": VoiceSettings("f5", 78),
}
PRESET_IDS = [f"{MODEL_ID}:{name}" for name in PRESETS]
_CUSTOM_VARIANTS = ["m1", "m2", "m3", "m4", "m5", "m6", "f1", "f2", "f3", "f4"]


def preset(voice_id: str) -> VoiceSettings | None:
    prefix, _, name = voice_id.partition(":")
    return PRESETS.get(name) if prefix == MODEL_ID else None


def custom_voice_settings(uri: str) -> VoiceSettings:
    """A custom voice sounds the same on every call: its variant and pitch come from a hash of its uri."""
    digest = hashlib.sha256(uri.encode()).digest()
    return VoiceSettings(_CUSTOM_VARIANTS[digest[0] % len(_CUSTOM_VARIANTS)], 25 + digest[1] % 51)


def contrasting(voice: VoiceSettings) -> VoiceSettings:
    """The S2 voice when only one voice was chosen: the other sex, far apart in pitch."""
    return PRESETS["david"] if voice.female else PRESETS["diana"]


# --- text into turns and sentences ---------------------------------------------------------------

_TAG = re.compile(r"\[S([12])\]", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?;。！？；])\s+|(?<=[。！？；])")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def segments(text: str) -> Iterator[tuple[int, str]]:
    """(speaker 1 or 2, sentence) in order; sentences longer than MAX_SEGMENT_CHARS are cut at spaces."""
    speaker = 1
    position = 0
    for match in [*_TAG.finditer(text), None]:
        end = match.start() if match else len(text)
        for sentence in _SENTENCE_END.split(text[position:end]):
            yield from ((speaker, piece) for piece in _cut(sentence.strip()) if piece)
        if match:
            speaker = int(match.group(1))
            position = match.end()


def _cut(sentence: str) -> Iterator[str]:
    while len(sentence) > MAX_SEGMENT_CHARS:
        cut = sentence.rfind(" ", 0, MAX_SEGMENT_CHARS)
        cut = cut if cut > 0 else MAX_SEGMENT_CHARS
        yield sentence[:cut].strip()
        sentence = sentence[cut:].strip()
    yield sentence


# --- the espeak-ng engine --------------------------------------------------------------------------

_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
_RATE, _PITCH, _WORDGAP = 1, 3, 7


class Cancelled(Exception):
    pass


class Espeak:
    """The process-wide espeak-ng engine; `synthesize` may be called from any thread."""

    def __init__(self):
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="espeak")
        self._lib = None
        self._callback = _CALLBACK(self._on_samples)  # kept referenced: espeak calls it until exit
        self._parts: list[bytes] = []
        self._cancelled: threading.Event | None = None

    def _load(self):
        lib = ctypes.CDLL(espeakng_loader.get_library_path())
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_Synth.argtypes = [
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
        rate = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, espeakng_loader.get_data_path().encode(), 0)
        if rate != SAMPLE_RATE:
            raise RuntimeError(f"espeak-ng failed to initialise (returned {rate})")
        lib.espeak_SetSynthCallback(self._callback)
        self._lib = lib

    def _on_samples(self, wav, count, events) -> int:
        if count > 0:
            self._parts.append(ctypes.string_at(wav, count * 2))
        # Returning 1 makes espeak abort the sentence: the client has gone.
        return 1 if self._cancelled is not None and self._cancelled.is_set() else 0

    def _synthesize(self, text: str, voice: VoiceSettings, speed: float, cancelled) -> bytes:
        if self._lib is None:
            self._load()
        lib = self._lib
        language = "cmn" if _CJK.search(text) else voice.language
        lib.espeak_SetVoiceByName(f"{language}+{voice.variant}".encode())
        wanted = BASE_RATE * speed
        lib.espeak_SetParameter(_RATE, int(min(max(wanted, MIN_RATE), MAX_RATE)), 0)
        # A word lasts about 0.75 s at 80 words/min; the gap (in 10 ms units) stretches slower speeds.
        lib.espeak_SetParameter(_WORDGAP, int(max(0.0, MIN_RATE / wanted - 1) * 75), 0)
        lib.espeak_SetParameter(_PITCH, voice.pitch, 0)
        self._parts, self._cancelled = [], cancelled
        data = text.encode()
        lib.espeak_Synth(data, len(data) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None)
        samples, self._parts, self._cancelled = b"".join(self._parts), [], None
        return samples

    def synthesize(
        self, text: str, voice: VoiceSettings, *, speed: float = 1.0, cancelled: threading.Event | None = None
    ) -> bytes:
        """22,050 Hz mono int16 samples of `text`; blocks the calling thread (never call it on the event loop)."""
        if cancelled is not None and cancelled.is_set():
            raise Cancelled
        samples = self._executor.submit(self._synthesize, text, voice, speed, cancelled).result()
        if cancelled is not None and cancelled.is_set():
            raise Cancelled
        return samples


engine = Espeak()


# --- a whole request -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SpeechJob:
    text: str
    speaker1: VoiceSettings
    speaker2: VoiceSettings
    response_format: str = "mp3"
    sample_rate: int = 44100
    speed: float = 1.0
    gain: float = 0.0


def encoded_chunks(job: SpeechJob, *, stream: bool, cancelled: threading.Event | None = None) -> Iterator[bytes]:
    """The encoded audio, one piece per sentence (blocking: run it in a thread).

    Only one sentence of samples is held at a time, so memory stays flat whatever the input length.
    """
    encoder = Encoder(job.response_format, job.sample_rate, gain_db=job.gain, stream=stream)
    head = encoder.start()
    if head:
        yield head
    for speaker, sentence in segments(job.text):
        voice = job.speaker1 if speaker == 1 else job.speaker2
        samples = engine.synthesize(sentence, voice, speed=job.speed, cancelled=cancelled)
        piece = encoder.encode(samples)
        if piece:
            yield piece
    tail = encoder.finish()
    if tail:
        yield tail


def render(job: SpeechJob, cancelled: threading.Event | None = None) -> bytes:
    """The whole clip at once (stream false); WAV then carries its exact sizes."""
    encoder = Encoder(job.response_format, job.sample_rate, gain_db=job.gain, stream=False)
    for speaker, sentence in segments(job.text):
        voice = job.speaker1 if speaker == 1 else job.speaker2
        encoder.encode(engine.synthesize(sentence, voice, speed=job.speed, cancelled=cancelled))
    return encoder.finish()


_DONE = object()


async def in_thread(produce: Callable[[threading.Event], Iterator[bytes]], maxsize: int = 4) -> AsyncIterator[bytes]:
    """Iterate a blocking generator in its own thread through a bounded queue.

    The queue bounds memory when the client reads slower than we synthesize. Closing this iterator (the
    client disconnected) sets the event the generator is given, which stops synthesis mid-sentence.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue(maxsize)
    cancelled = threading.Event()

    def put(item) -> bool:
        future = asyncio.run_coroutine_threadsafe(queue.put(item), loop)
        while True:
            try:
                future.result(timeout=0.5)
                return True
            except TimeoutError:
                if cancelled.is_set():
                    future.cancel()
                    return False

    def run():
        try:
            for item in produce(cancelled):
                if cancelled.is_set() or not put(item):
                    return
        except Cancelled:
            return
        except Exception as exc:
            put(exc)
            return
        put(_DONE)

    thread = threading.Thread(target=run, name="speech-stream", daemon=True)
    thread.start()
    try:
        while True:
            item = await queue.get()
            if item is _DONE:
                return
            if isinstance(item, Exception):
                raise item
            yield item
    finally:
        cancelled.set()
