"""Every request parameter, declared once with its bounds, default and help text (spec sections 2.1, 2.7, 2.9, 8).

The parameter panels and the server-side validation are both built from these declarations, filtered by
what the selected model supports, so a new model needs no code.
"""

import json
from dataclasses import dataclass, field

from django import forms
from django.core.validators import MaxValueValidator

UNSET = object()


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "int", "float", "bool", "choice", "text", "stops"
    help: str = ""
    minimum: float | None = None
    maximum: float | None = None
    default: object = None
    choices: tuple[str, ...] = ()
    requires: str | None = None  # capability flag on CatalogModel; None means every model of the kind
    step: float | None = None
    group: str = "Sampling"
    advanced: bool = False
    always: bool = False  # sent in every request (stream), not only when the user set it
    extra: dict = field(default_factory=dict)

    def supported_by(self, model) -> bool:
        # A model the catalog does not know gets no parameter that needs a capability.
        return model.supports(self.requires) if model is not None else self.requires is None


CHAT_PARAMS = [
    Param("stream", "bool", "Stream tokens as they are generated.", default=True, group="Output", always=True),
    Param(
        "max_tokens",
        "int",
        "Maximum tokens to generate; input + max_tokens must fit the context window.",
        minimum=1,
        maximum=None,
        default=None,
        group="Output",
    ),
    Param("temperature", "float", "Randomness of the answer.", minimum=0, maximum=2, default=0.7, step=0.05),
    Param("top_p", "float", "Nucleus sampling.", minimum=0, maximum=1, default=0.7, step=0.05),
    Param(
        "top_k",
        "int",
        "Sample from the k most likely tokens (not an OpenAI parameter).",
        minimum=0,
        maximum=100,
        default=50,
        requires="top_k",
    ),
    Param(
        "min_p",
        "float",
        "Dynamic filtering threshold (0 to 1).",
        minimum=0,
        maximum=1,
        default=None,
        step=0.01,
        requires="min_p",
    ),
    Param("frequency_penalty", "float", "Penalise repeated tokens.", minimum=-2, maximum=2, default=0.0, step=0.1),
    Param("n", "int", "Number of answers to generate.", minimum=1, maximum=8, default=1, group="Output"),
    Param(
        "seed",
        "int",
        "Same inputs and seed give the same answer (where supported).",
        minimum=0,
        maximum=2**31 - 1,
        default=None,
        group="Output",
        advanced=True,
    ),
    Param(
        "stop",
        "stops",
        "Up to 4 stop sequences, one per line; the answer ends before them.",
        group="Output",
        extra={"max_items": 4},
    ),
    Param(
        "response_format",
        "choice",
        "Ask for plain text or a JSON object.",
        choices=("text", "json_object"),
        default="text",
        group="Output",
        extra={"object_key": "type"},
    ),
    Param("enable_thinking", "bool", "Think before answering.", default=True, requires="thinking", group="Reasoning"),
    Param(
        "thinking_budget",
        "int",
        "Maximum tokens of reasoning (128 to 32768).",
        minimum=128,
        maximum=32768,
        default=4096,
        requires="thinking_budget",
        group="Reasoning",
    ),
    Param(
        "reasoning_effort",
        "choice",
        "How hard the model reasons.",
        choices=("high", "max"),
        default="high",
        requires="reasoning_effort",
        group="Reasoning",
    ),
]

RERANK_PARAMS = [
    Param("top_n", "int", "Number of most relevant documents to return.", minimum=1, default=None),
    Param("return_documents", "bool", "Include the document text in the response.", default=False),
    Param("instruction", "text", "Instruction that steers the ranking.", requires="rerank_instruction"),
    Param(
        "max_chunks_per_doc",
        "int",
        "Long documents are split; the best chunk scores the document.",
        minimum=1,
        default=1024,
        requires="rerank_chunking",
    ),
    Param(
        "overlap_tokens",
        "int",
        "Token overlap between adjacent chunks (0 to 80).",
        minimum=0,
        maximum=80,
        default=None,
        requires="rerank_chunking",
    ),
]

SAMPLE_RATES = {
    "mp3": (32000, 44100),
    "opus": (48000,),
    "wav": (8000, 16000, 24000, 32000, 44100),
    "pcm": (8000, 16000, 24000, 32000, 44100),
}
DEFAULT_SAMPLE_RATE = {"mp3": 44100, "opus": 48000, "wav": 44100, "pcm": 44100}
SPEECH_INPUT_LIMIT = 128000

SPEECH_PARAMS = [
    Param("response_format", "choice", "Audio format.", choices=("mp3", "opus", "wav", "pcm"), default="mp3"),
    Param(
        "sample_rate",
        "choice",
        "Output sample rate in Hz (the allowed rates depend on the format).",
        choices=tuple(str(rate) for rate in sorted({r for rates in SAMPLE_RATES.values() for r in rates})),
        default="44100",
    ),
    Param("speed", "float", "Speaking speed (0.25 to 4).", minimum=0.25, maximum=4, default=1.0, step=0.05),
    Param("gain", "float", "Volume gain in dB (-10 to 10).", minimum=-10, maximum=10, default=0.0, step=0.5),
    Param("stream", "bool", "Stream the audio as it is synthesized.", default=True),
    Param(
        "max_tokens",
        "int",
        "Output token limit; input + output must stay within 32k tokens.",
        minimum=1,
        maximum=32768,
        default=2048,
        advanced=True,
    ),
]


class StopsField(forms.CharField):
    """Stop sequences, one per line, at most `max_items`."""

    widget = forms.Textarea(attrs={"rows": 2})

    def __init__(self, *, max_items: int = 4, **kwargs):
        self.max_items = max_items
        super().__init__(strip=False, **kwargs)

    def to_python(self, value):
        text = super().to_python(value) or ""
        stops = [line for line in text.replace("\r\n", "\n").split("\n") if line != ""]
        if len(stops) > self.max_items:
            raise forms.ValidationError(
                f"stop: at most {self.max_items} stop sequences are allowed (got {len(stops)})."
            )
        return stops


class SwitchField(forms.TypedChoiceField):
    """A switch that may also be left to the provider: "", "true" or "false" (a checkbox's "on" means true)."""

    def to_python(self, value):
        value = super().to_python(value)
        return {"on": "true", "off": "false"}.get(value, value)


def form_field(param: Param, *, placeholders: bool = False) -> forms.Field:
    """The form field of a parameter. With `placeholders`, the spec's default is shown, not filled in: a field
    left empty is not sent, and switches and choices get a "provider default" option."""
    label = param.name
    common = {"label": label, "required": False, "help_text": param.help}
    initial = None if placeholders and not param.always else param.default
    default = "" if param.default is None else _num(param.default) if param.kind in ("int", "float") else param.default
    if param.kind == "bool":
        if initial is None and placeholders:
            said = "on" if param.default else "off"
            return SwitchField(
                choices=[("", f"provider default ({said})"), ("true", "on"), ("false", "off")],
                coerce=lambda value: value == "true",
                empty_value=None,
                **common,
            )
        return forms.BooleanField(initial=param.default, **common)
    if param.kind in ("int", "float"):
        kind = forms.IntegerField if param.kind == "int" else forms.FloatField
        field_ = kind(min_value=param.minimum, max_value=param.maximum, initial=initial, **common)
        if param.kind == "float":
            field_.widget.attrs["step"] = param.step or "any"
        if placeholders:
            field_.widget.attrs["placeholder"] = "default" if default == "" else default
        return field_
    if param.kind == "choice":
        choices = [(c, c) for c in param.choices]
        if placeholders:
            choices.insert(0, ("", f"provider default ({default})" if default else "provider default"))
        return forms.ChoiceField(choices=choices, initial=initial, **common)
    if param.kind == "stops":
        return StopsField(max_items=param.extra.get("max_items", 4), **common)
    return forms.CharField(initial=initial, **common)


def stored_data(param: Param, value) -> str | None:
    """A stored (JSON) value as the panel's form posts it; None when unset. ValueError in words when the value
    is not of the parameter's type (stored data is never trusted: it may come from an import or an old version)."""
    if value is None:
        return None
    expected = {
        "bool": (bool, "true or false"),
        "int": ((int, float), "a number"),
        "float": ((int, float), "a number"),
        "choice": (str, f"one of {', '.join(param.choices)}"),
        "text": (str, "text"),
        "stops": (list, "a list of up to 4 texts"),
    }[param.kind]
    if param.kind == "choice" and isinstance(value, dict) and param.extra.get("object_key") in value:
        value = value[param.extra["object_key"]]  # as it goes on the wire: {"type": "json_object"}
    ok = isinstance(value, expected[0]) and (param.kind == "bool" or not isinstance(value, bool))
    if param.kind == "stops" and ok:
        ok = all(isinstance(item, str) for item in value)
    if not ok:
        raise ValueError(f"{param.name}: expected {expected[1]} (got {json.dumps(value)[:60]}).")
    if param.kind == "bool":
        return ("on" if value else None) if param.always else ("true" if value else "false")
    if param.kind == "stops":
        return "\n".join(value)
    return str(value)


class ParamsForm(forms.Form):
    """Validates parameters with messages that name the field and the limit.

    `problems` are errors found before the form (a stored value of the wrong type), shown on their fields."""

    def __init__(self, *args, params: list[Param], placeholders: bool = False, problems=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.params = params
        self.problems = problems or {}
        for param in params:
            field_ = form_field(param, placeholders=placeholders)
            field_.error_messages.update(
                {
                    "min_value": f"{param.name}: must be at least {_num(param.minimum)}.",
                    "max_value": f"{param.name}: must be at most {_num(param.maximum)}.",
                    "invalid": f"{param.name}: enter a valid value.",
                    "invalid_choice": f"{param.name}: choose one of {', '.join(param.choices)}.",
                }
            )
            field_.widget.attrs.setdefault("data-param", param.name)
            self.fields[param.name] = field_

    def clean(self):
        for name, problem in self.problems.items():
            if name in self.fields:
                self.add_error(name, problem)
        return super().clean()

    def groups(self) -> list[tuple[str, list]]:
        """Bound fields grouped by their parameter's group, in order of first appearance (for the panels)."""
        grouped: dict[str, list] = {}
        for param in self.params:
            grouped.setdefault(param.group, []).append(self[param.name])
        return list(grouped.items())

    def request_values(self) -> dict:
        """The cleaned values that belong in the request body (unset ones are left to the provider's defaults)."""
        values = {}
        for param in self.params:
            value = self.cleaned_data.get(param.name)
            if param.kind == "bool" and isinstance(self.fields[param.name], forms.BooleanField):
                values[param.name] = bool(value)
            elif param.kind == "bool":
                if value is not None:
                    values[param.name] = value
            elif param.kind == "stops":
                if value:
                    values[param.name] = value
            elif value not in (None, ""):
                # Some fields are objects on the wire, e.g. response_format: {"type": "json_object"}.
                key = param.extra.get("object_key")
                values[param.name] = {key: value} if key else value
        return values


def _num(value) -> str:
    return str(int(value)) if value is not None and float(value).is_integer() else str(value)


def params_for(model, params: list[Param]) -> list[Param]:
    """The parameters the model supports, in declaration order."""
    return [param for param in params if param.supported_by(model)]


def params_form(model, params: list[Param], data=None, initial=None, *, placeholders=False, problems=None):
    return ParamsForm(
        data, initial=initial, params=params_for(model, params), placeholders=placeholders, problems=problems
    )


def cap_max_tokens(form: ParamsForm, model) -> ParamsForm:
    """max_tokens held to the model's largest output, said in words (the chat panel's and evaluate's variants)."""
    if model is not None and "max_tokens" in form.fields and model.max_output:
        field = form.fields["max_tokens"]
        field.validators.append(MaxValueValidator(model.max_output))
        field.error_messages["max_value"] = f"max_tokens: must be at most {model.max_output} for {model.model_id}."
        field.widget.attrs["max"] = model.max_output
    return form


def set_params(params: dict | None) -> dict:
    """Only the parameters that were set (as the request JSON sends them): no None, "", [] or {}."""
    return {name: value for name, value in (params or {}).items() if value not in (None, "", [], {})}
