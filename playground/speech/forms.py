from django import forms

from playground import inputs
from playground.catalog.forms import ModelPickerForm
from playground.catalog.params import SAMPLE_RATES, SPEECH_INPUT_LIMIT, SPEECH_PARAMS, params_form
from playground.speech.models import SpeechClip

PRESET_VOICES = ["alex", "anna", "bella", "benjamin", "charles", "claire", "david", "diana"]
PREVIEW_TEXT = "Hello! This is a short preview of my voice. [S2] And this is the second speaker answering."


def preset_voices(model_id: str) -> list[str]:
    """The 8 predefined voices, each `<model id>:<name>` (spec 2.9)."""
    return [f"{model_id}:{name}" for name in PRESET_VOICES]


class SpeechForm(ModelPickerForm):
    """Connection, model, text and voices; the audio parameters are a separate ParamsForm (`params`).

    `voice` and the two `reference_*` voices are mutually exclusive (spec 2.9); the page disables the group
    that is not chosen, and `clean()` refuses a request carrying both.
    """

    model_kind = "speech"

    def history(self):
        return SpeechClip.objects.for_user(self.user)

    input = forms.CharField(
        label="Text",
        strip=False,
        max_length=SPEECH_INPUT_LIMIT,
        widget=forms.Textarea(attrs={"rows": 9, "placeholder": "[S1] Hello there! [S2] Hi, how are you?"}),
        error_messages={
            "required": f"input: required, 1 to {SPEECH_INPUT_LIMIT} characters.",
            "max_length": f"input: at most {SPEECH_INPUT_LIMIT} characters (got %(show_value)d).",
        },
    )
    voice = forms.CharField(required=False, max_length=300)
    reference_1 = forms.CharField(required=False, max_length=300, label="Reference voice S1")
    reference_2 = forms.CharField(required=False, max_length=300, label="Reference voice S2")

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, user=user, **kwargs)
        self.custom_voices = []  # set by the view from the provider's voice list
        self.presets = preset_voices(self.chosen_model.model_id) if self.chosen_model else []
        self.params = params_form(
            self.chosen_model, SPEECH_PARAMS, self.data if self.is_bound else None, self.initial.get("params")
        )

    def value_of(self, name: str) -> str:
        return self._wanted(name) or ""

    @property
    def uses_references(self) -> bool:
        return bool(self.value_of("reference_1") or self.value_of("reference_2")) and not self.value_of("voice")

    def _check_voice(self, name: str, value: str) -> None:
        # Custom voices are checked by the provider (they are the caller's own); presets must match the model.
        if value and not value.startswith("speech:") and value not in self.presets:
            self.add_error(
                name, f"{name}: choose one of the {len(self.presets)} voices of {self.chosen_model} or one of yours."
            )

    def clean(self):
        cleaned = super().clean()
        voice = cleaned.get("voice") or ""
        first, second = cleaned.get("reference_1") or "", cleaned.get("reference_2") or ""
        if voice and (first or second):
            self.add_error(
                "voice", "voice: mutually exclusive with references — choose one voice or two reference voices."
            )
        elif (first or second) and not (first and second):
            self.add_error(
                "reference_1" if not first else "reference_2",
                "references: two reference voices are needed, one for [S1] and one for [S2].",
            )
        elif not voice and not first:
            self.add_error("voice", "voice: choose a voice, or two reference voices.")
        for name, value in (("voice", voice), ("reference_1", first), ("reference_2", second)):
            self._check_voice(name, value)
        return cleaned

    def is_valid(self) -> bool:
        own = super().is_valid()
        params_ok = self.params.is_valid()
        if params_ok:
            response_format = self.params.cleaned_data.get("response_format") or "mp3"
            rate = self.params.cleaned_data.get("sample_rate")
            allowed = SAMPLE_RATES.get(response_format, ())
            if rate and int(rate) not in allowed:
                self.params.add_error(
                    "sample_rate",
                    f"sample_rate: {response_format} supports {', '.join(str(r) for r in allowed)} Hz (got {rate}).",
                )
                params_ok = False
        return own and params_ok

    def clip_fields(self) -> dict:
        """The keyword arguments of services.start_clip for this valid form."""
        values = self.params.request_values()
        response_format = values.pop("response_format", "mp3")
        sample_rate = int(values.pop("sample_rate", 0) or 0) or None
        first, second = self.cleaned_data.get("reference_1"), self.cleaned_data.get("reference_2")
        return {
            "connection": self.chosen_connection,
            "model": self.chosen_model.model_id,
            "text": self.cleaned_data["input"],
            "voice": "" if first else self.cleaned_data.get("voice", ""),
            "references": [{"audio": first}, {"audio": second}] if first else None,
            "response_format": response_format,
            "sample_rate": sample_rate or SAMPLE_RATES[response_format][-1],
            "params": values,
        }


class VoicePicker(ModelPickerForm):
    """The connection whose voices the voices page manages, and the speech model that creates and previews them."""

    model_kind = "speech"


class VoiceUploadForm(forms.Form):
    custom_name = forms.RegexField(
        regex=r"^[a-zA-Z0-9_-]{1,64}$",
        max_length=64,
        label="Name",
        help_text="1 to 64 letters, digits, _ or -.",
        error_messages={"invalid": "customName: 1 to 64 characters among a-z, A-Z, 0-9, _ and -."},
    )
    text = forms.CharField(
        label="Transcript",
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Exactly what is said in the recording.",
        error_messages={"required": "text: required, the transcript of the recording."},
    )
    audio = forms.FileField(
        label="Reference recording",
        help_text="An audio file (mp3, wav, ogg…), at most 30 s and 10 MB.",
        widget=forms.ClearableFileInput(attrs={"accept": "audio/*"}),
        error_messages={"required": "file: required, an audio recording."},
    )

    def clean_audio(self):
        audio = self.cleaned_data["audio"]
        if audio.size > 10 * 1024 * 1024:
            raise forms.ValidationError(f"file: at most 10 MB (got {audio.size // 1024} KB).")
        claimed = (audio.content_type or "").split(";")[0].strip().lower()
        audio.seek(0)
        try:
            inputs.probe_media(audio.read(), claimed if claimed.startswith("audio/") else "audio/*")
        except inputs.InputError as exc:
            raise forms.ValidationError(f"file: {audio.name} is not an audio recording: {exc}.") from None
        audio.seek(0)
        return audio
