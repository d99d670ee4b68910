"""What /audio/speech asks for, checked against the spec before anything is synthesized (`parse`), and the job
the synthesizer (tts.py) is given for it once its voices are resolved (`job_for`)."""

from dataclasses import dataclass

from playground.localapi.engines.audio import DEFAULT_SAMPLE_RATES, SAMPLE_RATES
from playground.localapi.engines.tts import MODEL_ID, SpeechJob, VoiceSettings, contrasting
from playground.localapi.tokens import count_tokens

UNKNOWN_MODEL, INVALID, UNSUPPORTED = 20012, 20015, 20016
MAX_INPUT_CHARS = 128000
TOKEN_LIMIT = 32768
DEFAULT_MAX_TOKENS = 2048
FORMATS = ("mp3", "opus", "wav", "pcm")


class Invalid(ValueError):
    def __init__(self, message: str, code: int = INVALID):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class SpeechRequest:
    """A validated request whose voices are still ids: custom uris need the database to resolve.

    Choices where the spec is silent or contradicts itself:
    - `sample_rate` defaults to 44100 for mp3, wav and pcm and 48000 for opus (the per-format text, not
      the stated default of 32000, which opus and wav cannot honour identically).
    - `references` items are `{"audio": <voice id or uri>, "text": <transcript, optional>}` (the
      OpenAI-compatible reference-voice shape): exactly two, S1 then S2; `audio` names a preset
      (`local/tts:<name>`) or one of the caller's voices (`speech:...`).
    - Neither voice nor references: S1 is `local/tts:alex`.
    - `max_tokens` bounds the output; the check is input tokens + max_tokens <= 32768. espeak output is not
      cut at max_tokens (it is not a token model): the limit is a budget check only.
    """

    text: str
    voices: tuple[str, ...]  # one (voice) or two (references)
    response_format: str
    sample_rate: int
    stream: bool
    speed: float
    gain: float
    input_tokens: int
    max_tokens: int


def _number(body: dict, name: str, default: float, low: float, high: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Invalid(f"{name}: must be a number")
    if not low <= value <= high:
        raise Invalid(f"{name}: must be between {low:g} and {high:g} inclusive (got {value})")
    return float(value)


def parse(body: dict, model) -> SpeechRequest:
    if model is None or model.kind != "speech":
        name = body.get("model")
        if not name:
            raise Invalid("model: required (the one speech model is local/tts)")
        raise Invalid(f"model: no speech model named {name!r}; the one allowed value is {MODEL_ID}", UNKNOWN_MODEL)
    text = body.get("input")
    if not isinstance(text, str) or not text:
        raise Invalid("input: required, a string of 1 to 128000 characters")
    if len(text) > MAX_INPUT_CHARS:
        raise Invalid(f"input: at most {MAX_INPUT_CHARS} characters (got {len(text)})")
    max_tokens = body.get("max_tokens", DEFAULT_MAX_TOKENS)
    if max_tokens is None:
        max_tokens = DEFAULT_MAX_TOKENS
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise Invalid("max_tokens: must be an integer of at least 1")
    input_tokens = count_tokens(text)
    if input_tokens + max_tokens > TOKEN_LIMIT:
        raise Invalid(
            f"max_tokens: input ({input_tokens} tokens) plus max_tokens ({max_tokens}) exceeds the "
            f"{TOKEN_LIMIT}-token limit of input + output"
        )
    voice, references = body.get("voice"), body.get("references")
    if voice is not None and references is not None:
        raise Invalid("voice: mutually exclusive with references; send one of them")
    if references is not None:
        if not isinstance(references, list) or len(references) != 2:
            raise Invalid("references: must be an array of exactly 2 reference voices ({audio, text})")
        voices = []
        for position, item in enumerate(references):
            if not isinstance(item, dict) or not isinstance(item.get("audio"), str) or not item["audio"]:
                raise Invalid(f"references[{position}].audio: required, a voice id or the uri of one of your voices")
            if item.get("text") is not None and not isinstance(item["text"], str):
                raise Invalid(f"references[{position}].text: must be a string")
            voices.append(item["audio"])
    elif voice is not None:
        if not isinstance(voice, str) or not voice:
            raise Invalid("voice: must be a string")
        voices = [voice]
    else:
        voices = [f"{MODEL_ID}:alex"]
    response_format = body.get("response_format") or "mp3"
    if response_format not in FORMATS:
        raise Invalid(f"response_format: must be one of {', '.join(FORMATS)} (got {response_format!r})")
    sample_rate = body.get("sample_rate")
    if sample_rate is None:
        sample_rate = DEFAULT_SAMPLE_RATES[response_format]
    allowed = SAMPLE_RATES[response_format]
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, int | float) or sample_rate not in allowed:
        raise Invalid(
            f"sample_rate: {response_format} supports {', '.join(str(r) for r in allowed)} Hz (got {sample_rate!r})"
        )
    stream = body.get("stream", True)
    if stream is None:
        stream = True
    if not isinstance(stream, bool):
        raise Invalid("stream: must be a boolean")
    return SpeechRequest(
        text=text,
        voices=tuple(voices),
        response_format=response_format,
        sample_rate=int(sample_rate),
        stream=stream,
        speed=_number(body, "speed", 1.0, 0.25, 4.0),
        gain=_number(body, "gain", 0.0, -10.0, 10.0),
        input_tokens=input_tokens,
        max_tokens=max_tokens,
    )


def job_for(request: SpeechRequest, voices: list[VoiceSettings]) -> SpeechJob:
    speaker1 = voices[0]
    speaker2 = voices[1] if len(voices) > 1 else contrasting(speaker1)
    return SpeechJob(
        text=request.text,
        speaker1=speaker1,
        speaker2=speaker2,
        response_format=request.response_format,
        sample_rate=request.sample_rate,
        speed=request.speed,
        gain=request.gain,
    )
