import mimetypes
from collections.abc import Callable
from dataclasses import dataclass, field

from django import forms

from playground import inputs
from playground.catalog.chat_params import (  # noqa: F401  (the panel's parser, re-exported for chat's modules)
    MAX_TOOLS,
    TOOL_NAME,
    chat_params_form,
    imported_params,
    parse_tools,
    stored_to_data,
    stored_values,
)
from playground.catalog.forms import ModelPickerForm
from playground.catalog.models import CatalogModel
from playground.chat.models import CONTEXT_POLICIES

MESSAGE_LIMIT = 200_000


class ComposerForm(forms.Form):
    content = forms.CharField(
        label="Message",
        max_length=MESSAGE_LIMIT,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "Send a message (Enter sends, Shift+Enter: new line)"}),
        error_messages={
            "required": "Message: write something first.",
            "max_length": f"Message: at most {MESSAGE_LIMIT:,} characters (it has %(show_value)d).",
        },
    )

    def clean_content(self):
        content = self.cleaned_data["content"]
        if not content.strip():
            raise forms.ValidationError("Message: write something first.")
        return content


class RenameForm(forms.Form):
    title = forms.CharField(label="Title", max_length=200)


class ChatModelPicker(ModelPickerForm):
    """The chat panel's picker. `kept` finds the conversation's own model: when the provider stopped listing it, it
    stays offered (and selected) in the conversation that uses it, on that conversation's connection. It is called
    only then (a listed model needs no lookup of its own)."""

    model_kind = "chat"

    def __init__(self, *args, kept: Callable[[], CatalogModel | None] | None = None, kept_on=None, **kwargs):
        self.kept, self.kept_on = kept, kept_on
        super().__init__(*args, **kwargs)

    def models_for(self, connection) -> list[CatalogModel]:
        models = super().models_for(connection)
        wanted = self._wanted("model")
        if self.kept is None or connection.pk != self.kept_on or any(m.model_id == wanted for m in models):
            return models
        kept = self.kept()
        return [*models, kept] if kept is not None and kept.model_id == wanted else models


class SettingsForm(forms.Form):
    """The panel's other settings (the connection and the model are the ChatModelPicker's)."""

    system_prompt = forms.CharField(label="System prompt", required=False, widget=forms.Textarea(attrs={"rows": 3}))
    context_policy = forms.ChoiceField(label="When over 10 messages", choices=CONTEXT_POLICIES, required=False)


# ---------------------------------------------------------------- attachments

MAX_ATTACHMENTS = 5
MAX_ATTACHMENT_MB = 20
MAX_ATTACHMENT_BYTES = MAX_ATTACHMENT_MB * 1024 * 1024
# The content types accepted per kind, with the names the error messages use.
ACCEPTED_TYPES = {
    "image": {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WebP"},
    "audio": {
        "audio/mpeg": "MP3",
        "audio/wav": "WAV",
        "audio/x-wav": "WAV",
        "audio/ogg": "Ogg",
        "audio/opus": "Opus",
        "audio/webm": "WebM",
        "audio/mp4": "M4A",
        "audio/x-m4a": "M4A",
        "audio/flac": "FLAC",
        "audio/aac": "AAC",
    },
    "video": {"video/mp4": "MP4", "video/webm": "WebM", "video/quicktime": "MOV", "video/ogg": "Ogg"},
    "pdf": {"application/pdf": "PDF"},
}
# The catalog flag a kind needs, and how an error names the kind and the model to choose instead.
KIND_FLAGS = {"image": "vision", "audio": "audio", "video": "video", "pdf": "pdf"}
KIND_ADVICE = {
    "image": ("images", "choose a vision model"),
    "audio": ("audio", "choose a model with audio input"),
    "video": ("video", "choose a model with video input"),
    "pdf": ("PDFs", "choose a model with PDF input"),
}
_IMAGE_MAGIC = [
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
]


@dataclass
class Upload:
    """A validated file of the message being sent (its bytes in memory until it is saved as an Attachment)."""

    kind: str
    content_type: str
    name: str
    size: int
    data: bytes
    options: dict = field(default_factory=dict)

    def read(self, limit: int | None = None) -> bytes:
        return self.data if limit is None else self.data[:limit]


def accepted_kinds(model) -> list[str]:
    return [kind for kind, flag in KIND_FLAGS.items() if model is not None and getattr(model, flag, False)]


def accept_attribute(model) -> str:
    """The file input's accept= for a model: the content types of the kinds it takes ("" when none)."""
    return ",".join(t for kind in accepted_kinds(model) for t in ACCEPTED_TYPES[kind])


def _kind_of(content_type: str) -> str | None:
    return next((kind for kind, types in ACCEPTED_TYPES.items() if content_type in types), None)


def _image_type(data: bytes) -> str | None:
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return next((mime for magic, mime in _IMAGE_MAGIC if data.startswith(magic)), None)


def human_size(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB" if size >= 1024 * 1024 else f"{max(1, round(size / 1024))} KB"


def _clean_upload(upload, model) -> Upload:
    name = upload.name or "file"
    content_type = (upload.content_type or "").split(";")[0].strip().lower()
    if _kind_of(content_type) is None:
        content_type = (mimetypes.guess_type(name)[0] or content_type).lower()
    kind = _kind_of(content_type)
    if kind is None:
        accepted = "; ".join(
            f"{kind} ({', '.join(dict.fromkeys(types.values()))})" for kind, types in ACCEPTED_TYPES.items()
        )
        raise forms.ValidationError(
            f"attachments: {name} ({content_type or 'unknown type'}) is not an accepted type; accepted: {accepted}."
        )
    if kind not in accepted_kinds(model):
        what, advice = KIND_ADVICE[kind]
        model_id = model.model_id if model else "this model"
        raise forms.ValidationError(f"attachments: {model_id} does not accept {what}; {advice}.")
    if upload.size > MAX_ATTACHMENT_BYTES:
        raise forms.ValidationError(
            f"attachments: {name} is {human_size(upload.size)}; the limit is {MAX_ATTACHMENT_MB} MB per file."
        )
    if not upload.size:
        raise forms.ValidationError(f"attachments: {name} is empty.")
    upload.seek(0)
    data = upload.read()
    # What the bytes are wins over what the browser said; a file that is not what it claims is refused.
    if kind == "image":
        sniffed = _image_type(data)
        if sniffed is None:
            raise forms.ValidationError(f"attachments: {name} is not a PNG, JPEG, GIF or WebP image.")
        content_type = sniffed
    elif kind == "pdf" and not data.startswith(b"%PDF-"):
        raise forms.ValidationError(f"attachments: {name} is not a PDF file.")
    elif kind in ("audio", "video"):
        try:
            content_type = inputs.probe_media(data, content_type)
        except inputs.InputError as exc:
            raise forms.ValidationError(f"attachments: {name} is not {kind} of an accepted type: {exc}.") from None
    return Upload(kind=kind, content_type=content_type, name=name[:255], size=len(data), data=data)


def clean_attachments(files: list, model) -> list[Upload]:
    """The files posted with a message, checked against the limits and the model (errors name both)."""
    if len(files) > MAX_ATTACHMENTS:
        raise forms.ValidationError(f"attachments: at most {MAX_ATTACHMENTS} files per message (got {len(files)}).")
    uploads, errors = [], []
    for upload in files:
        try:
            uploads.append(_clean_upload(upload, model))
        except forms.ValidationError as exc:
            errors.extend(m for m in exc.messages if m not in errors)
    if errors:
        raise forms.ValidationError(errors)
    return uploads


# Per-attachment options of the content part (spec 2.4); max_frams is the spec's own spelling.
DETAILS = ("auto", "low", "high")
MAX_FPS = 60
MAX_FRAMS = 10_000


def _option_int(value, name: str, where: str, high: int) -> int | None:
    if value in (None, ""):
        return None
    try:
        number = int(str(value).strip())
    except ValueError:
        raise forms.ValidationError(f"{where}.{name}: must be a whole number from 1 to {high}.") from None
    if not 1 <= number <= high:
        raise forms.ValidationError(f"{where}.{name}: {number} is out of range; allowed 1 to {high}.")
    return number


def apply_attachment_options(uploads: list[Upload], text: str) -> list[Upload]:
    """Set each upload's options from the composer's `attachment_options` (a JSON array in the files' order):
    `detail` for images and videos (auto is the default and is not stored), `fps` and `max_frams` for videos."""
    if not text.strip():
        return uploads
    try:
        items = inputs.loads(text, field="attachment_options")
    except (inputs.InputError, ValueError):
        raise forms.ValidationError("attachment_options: not valid JSON (an array of objects).") from None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise forms.ValidationError("attachment_options: must be an array of objects, one per file.")
    for index, (upload, item) in enumerate(zip(uploads, items, strict=False)):
        where = f"attachments[{index}] ({upload.name})"
        options = {}
        detail = item.get("detail") or "auto"
        if upload.kind in ("image", "video"):
            if detail not in DETAILS:
                raise forms.ValidationError(f"{where}.detail: must be one of {', '.join(DETAILS)}.")
            if detail != "auto":
                options["detail"] = detail
        if upload.kind == "video":
            for name, high in (("fps", MAX_FPS), ("max_frams", MAX_FRAMS)):
                value = _option_int(item.get(name), name, where, high)
                if value is not None:
                    options[name] = value
        upload.options = options
    return uploads
