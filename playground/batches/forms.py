import re

from django import forms

from playground.batches.models import Batch
from playground.batches.variables import build_requests, parse_rows
from playground.catalog.forms import ModelPickerForm
from playground.connections.models import Connection, last_used, pick_connection
from playground.prompts.models import PromptVersion

# The local API reads the spec's contradictory bounds ("maximum 24 hours, minimum 336 hours") as one
# interval, 24h to 336h (see localapi/engines/batches.py); we validate the same before sending.
WINDOW_MIN_HOURS = 24
WINDOW_MAX_HOURS = 336
WINDOW_RE = re.compile(r"^([1-9][0-9]*)h$")
METADATA_MAX_PAIRS = 16
METADATA_MAX_KEY = 64
METADATA_MAX_VALUE = 512
MAX_PROMPTS = 1000
MAX_FILE_BYTES = 100 * 1024 * 1024
SOURCES = [("prompts", "Write prompts"), ("upload", "Upload a JSONL file"), ("version", "A prompt version")]
MAX_VERSIONS = 200  # the newest library versions the form lists


class BatchForm(ModelPickerForm):
    """A connection, a chat model (typed by hand when the connection lists none) and the requests."""

    model_kind = "chat"
    model_typed = True

    def history(self):
        return Batch.objects.for_user(self.user)

    source = forms.ChoiceField(choices=SOURCES, initial="prompts", widget=forms.RadioSelect)
    prompts = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 5, "placeholder": "One prompt per line"}),
        help_text=f"One request per non-empty line (at most {MAX_PROMPTS}); ids are request-1, request-2, …",
    )
    system = forms.CharField(
        label="System prompt",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "Optional, sent with every prompt"}),
    )
    max_tokens = forms.IntegerField(label="Max tokens", required=False, min_value=1, max_value=32768)
    file = forms.FileField(
        label="Requests file (.jsonl)",
        required=False,
        widget=forms.FileInput(attrs={"accept": ".jsonl,.json,.txt,application/jsonl"}),
        help_text='One request per line: {"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}.',
    )
    version = forms.TypedChoiceField(
        label="Prompt version",
        coerce=int,
        required=False,
        empty_value=None,
        help_text="A version of a library prompt (yours or a team's): its messages, parameters and tools.",
    )
    variables = forms.CharField(
        label="Variable rows",
        required=False,
        strip=False,
        widget=forms.Textarea(
            attrs={"rows": 4, "placeholder": 'topic,n\nrivers,20   or   {"topic": "rivers", "n": 20}'}
        ),
        help_text=f"One request per row: CSV with a header row, or JSON lines (at most {MAX_PROMPTS} rows).",
    )
    variables_file = forms.FileField(
        label="Or a file of rows (.csv, .jsonl)",
        required=False,
        widget=forms.FileInput(attrs={"accept": ".csv,.jsonl,.json,.txt"}),
    )
    completion_window = forms.CharField(
        label="Completion window",
        initial="24h",
        max_length=8,
        help_text=f"Hours: {WINDOW_MIN_HOURS}h to {WINDOW_MAX_HOURS}h.",
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, user=user, **kwargs)
        self.metadata_rows = self._metadata_rows()
        versions = PromptVersion.objects.for_user(user).select_related("prompt", "prompt__team")
        self.versions = {v.pk: v for v in versions.order_by("-created", "-pk")[:MAX_VERSIONS]}
        self.fields["version"].choices = [("", "Choose a version")] + [
            (v.pk, f"{v.prompt.name}@v{v.number} ({v.prompt.owner_label})") for v in self.versions.values()
        ]
        self.fields["version"].error_messages["invalid_choice"] = "version: choose a version of a prompt you can use."

    def _metadata_rows(self) -> list[tuple[str, str]]:
        if not self.is_bound:
            return [("", "")]
        keys = self.data.getlist("metadata_key")
        values = self.data.getlist("metadata_value")
        rows = list(zip(keys, values + [""] * (len(keys) - len(values)), strict=False))
        return rows or [("", "")]

    def clean_completion_window(self):
        window = self.cleaned_data["completion_window"].strip().lower()
        match = WINDOW_RE.match(window)
        if not match:
            raise forms.ValidationError("completion_window: write it as a number of hours, like 24h.")
        if not WINDOW_MIN_HOURS <= int(match.group(1)) <= WINDOW_MAX_HOURS:
            raise forms.ValidationError(
                f"completion_window: must be between {WINDOW_MIN_HOURS}h and {WINDOW_MAX_HOURS}h (got {window})."
            )
        return window

    def clean_file(self):
        upload = self.cleaned_data.get("file")
        if upload and upload.size > MAX_FILE_BYTES:
            raise forms.ValidationError("file: larger than the limit of 100 MB.")
        return upload

    def clean(self):
        cleaned = super().clean()
        cleaned["metadata"] = self._clean_metadata()
        if cleaned.get("source") == "upload":
            if not cleaned.get("file"):
                self.add_error("file", "file: choose a .jsonl file of requests to upload.")
        elif cleaned.get("source") == "prompts":
            self._clean_prompts(cleaned)
        elif cleaned.get("source") == "version":
            self._clean_version(cleaned)
        return cleaned

    def _clean_version(self, cleaned) -> None:
        """The version's requests, one per variable row: the rows' errors name the row and the variable."""
        version = self.versions.get(cleaned.get("version"))
        if version is None:
            if "version" not in self.errors:
                self.add_error("version", "version: choose the prompt version the rows fill.")
            return
        text = cleaned.get("variables") or ""
        upload = cleaned.get("variables_file")
        if upload:
            if upload.size > MAX_FILE_BYTES:
                self.add_error("variables_file", "variables_file: larger than the limit of 100 MB.")
                return
            text = upload.read().decode("utf-8", errors="replace")
        model = cleaned.get("model") or version.model_id
        if not model:
            self.add_error("model", "model: choose the model that answers the rows.")
            return
        rows, errors = parse_rows(text)
        bodies, problems = build_requests(version, rows, model) if not errors else ([], [])
        for error in (errors or problems)[:20]:
            self.add_error("variables", error)
        cleaned["model"], cleaned["prompt_version"], cleaned["bodies"] = model, version, bodies

    def _clean_prompts(self, cleaned) -> None:
        model = cleaned.get("model") or ""
        if not model and "model" not in self.errors:
            self.add_error("model", "model: choose the model that answers the prompts.")
        prompts = [line.strip() for line in (cleaned.get("prompts") or "").splitlines() if line.strip()]
        if not prompts:
            self.add_error("prompts", "prompts: write at least one prompt (one per line).")
        elif len(prompts) > MAX_PROMPTS:
            self.add_error("prompts", f"prompts: at most {MAX_PROMPTS} per batch (got {len(prompts)}).")
        cleaned["model"] = model
        cleaned["prompt_list"] = prompts

    def _clean_metadata(self) -> dict[str, str]:
        """Key/value rows; empty rows are skipped. Limits of spec 2.6: 16 pairs, keys 64, values 512."""
        metadata: dict[str, str] = {}
        errors = []
        for number, (key, value) in enumerate(self.metadata_rows, start=1):
            key = key.strip()
            if not key and not value:
                continue
            if "\x00" in key + value:
                errors.append(f"metadata: row {number} contains a NUL character (\\u0000), which is not allowed.")
            elif not key:
                errors.append(f"metadata: row {number} has a value but no key.")
            elif len(key) > METADATA_MAX_KEY:
                errors.append(
                    f"metadata: key in row {number} is {len(key)} characters; the limit is {METADATA_MAX_KEY}."
                )
            elif len(value) > METADATA_MAX_VALUE:
                errors.append(
                    f"metadata: value of '{key}' is {len(value)} characters; the limit is {METADATA_MAX_VALUE}."
                )
            elif key in metadata:
                errors.append(f"metadata: key '{key}' appears twice.")
            else:
                metadata[key] = value
        if len(metadata) > METADATA_MAX_PAIRS:
            errors.append(f"metadata: {len(metadata)} pairs; the limit is {METADATA_MAX_PAIRS}.")
        # Shown under the metadata rows: the form's only non-field errors.
        for error in errors:
            self.add_error(None, error)
        return metadata

    def input_file(self) -> tuple[str, bytes]:
        """The JSONL to upload: the chosen file as it is, or one written from the prompts."""
        from playground.batches.services import build_jsonl, build_lines

        data = self.cleaned_data
        if data["source"] == "version":
            return f"{data['prompt_version'].prompt.name}-v{data['prompt_version'].number}.jsonl", build_lines(
                data["bodies"]
            )
        if data["source"] == "upload":
            upload = data["file"]
            return upload.name, upload.read()
        content = build_jsonl(
            model=data["model"],
            prompts=data["prompt_list"],
            system=data["system"].strip(),
            max_tokens=data["max_tokens"],
        )
        return "prompts.jsonl", content


class ResubmitForm(forms.Form):
    """The connection a forked batch's requests are sent again through: one the user may use, starting on the last
    used one for batches (else the user's own before a team's), like every form; a refused one may be changed."""

    connection = forms.ModelChoiceField(
        queryset=Connection.objects.none(),
        empty_label=None,
        error_messages={"invalid_choice": "connection: choose one of your connections."},
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        usable = Connection.objects.for_user(user)
        self.fields["connection"].queryset = usable
        latest = last_used(Batch.objects.for_user(user))
        start = pick_connection(usable, latest and latest.connection_id)
        self.initial.setdefault("connection", start.pk if start else None)

    @property
    def chosen(self) -> int | None:
        """The pk the select shows: the one posted, else the one it starts on."""
        value = self.data.get("connection") if self.is_bound else self.initial.get("connection")
        try:
            return int(value)
        except (TypeError, ValueError):
            return None
