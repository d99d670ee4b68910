"""The one connection → model picker every page uses, and the forms of the catalog pages."""

from django import forms
from django.urls import reverse
from django.utils.http import urlencode

from playground.catalog.models import KINDS, CatalogModel
from playground.connections.models import Connection, last_used, pick_connection

# The capability flags a picker may require of its models (CatalogModel boolean fields).
CAPABILITIES = ("vision", "audio", "video", "pdf", "tools", "thinking", "reasoning_effort", "rerank_instruction")


class ModelPickerForm(forms.Form):
    """The one connection → model picker: one of the user's connections, then one of its models.

    The models are the connection's models of `model_kind` that have the `model_capability` flag (if any).
    `chosen_connection` and `chosen_model` are the submitted (or initial) ones when they exist, else the first
    of each, so the page always has something selected; another user's connection is never offered, and
    posting one is an invalid choice. With `model_typed`, the model is optional and may be typed by hand when
    the connection lists none. Pages subclass it (or pass kind=, capability=, typed=); the template is
    kit/_model_picker.html. A page whose form names no connection starts on the last used one (`history`), else on
    the user's own before a team's (`pick_connection`). `connections`: the user's usable connections when the
    caller has read them already (`Connection.objects.for_user`, in its order).
    """

    model_kind = ""
    model_capability = ""
    model_typed = False
    connection = forms.ModelChoiceField(queryset=Connection.objects.none(), empty_label=None)
    model = forms.ChoiceField()

    def __init__(self, *args, user, kind=None, capability=None, typed=None, connections=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        self.model_kind = self.model_kind if kind is None else kind
        self.model_capability = self.model_capability if capability is None else capability
        self.model_typed = self.model_typed if typed is None else typed
        if self.model_capability not in ("", *CAPABILITIES):
            raise ValueError(f"capability: one of {', '.join(CAPABILITIES)}")
        self.fields["connection"].queryset = Connection.objects.for_user(user)
        # Read once: the select lists them and the form starts on one of them (a caller that read them passes them).
        self.connections = list(self.fields["connection"].queryset if connections is None else connections)
        self.chosen_connection = pick_connection(self.connections, self._wanted("connection"))
        self.models = self.models_for(self.chosen_connection) if self.chosen_connection else []
        if self.model_typed:
            self.fields["model"] = forms.CharField(required=False, max_length=200)
        else:
            self.fields["model"].choices = [(m.model_id, m.model_id) for m in self.models]
            self.fields["model"].error_messages["invalid_choice"] = (
                f"model: choose a {self.kind_label} model of this connection."
            )
        wanted_model = self._wanted("model")
        self.chosen_model = next((m for m in self.models if m.model_id == wanted_model), None) or (
            self.models[0] if self.models else None
        )
        if self.chosen_connection:
            self.initial.setdefault("connection", self.chosen_connection.pk)
        if self.chosen_model:
            self.initial["model"] = self.chosen_model.model_id

    @property
    def kind_label(self) -> str:
        return " ".join(word for word in (self.model_kind, self.model_capability) if word)

    @property
    def picker_url(self) -> str:
        """The picker view that re-renders this picker alone (pages that re-render more pass their own URL)."""
        wanted = {
            "kind": self.model_kind,
            "capability": self.model_capability,
            "typed": "1" if self.model_typed else "",
        }
        return f"{reverse('catalog:picker')}?{urlencode({k: v for k, v in wanted.items() if v})}"

    def models_for(self, connection) -> list[CatalogModel]:
        models = CatalogModel.objects.for_connection(connection, kind=self.model_kind or None)
        if self.model_capability:
            models = models.filter(**{self.model_capability: True})
        return list(models)

    def clean_model(self):
        model = (self.cleaned_data.get("model") or "").strip()
        if self.model_typed and model and self.models and model not in {m.model_id for m in self.models}:
            raise forms.ValidationError(f"model: '{model}' is not offered on this connection.")
        return model

    def history(self):
        """The user's rows of this page (clips, runs, batches), newest first: the form starts on the connection of
        the newest (None: no history to start from)."""
        return None

    def _wanted(self, name: str):
        if self.is_bound:
            return self.data.get(name)
        wanted = self.initial.get(name)
        if name == "connection" and not wanted and (rows := self.history()) is not None:
            latest = last_used(rows)
            return latest.connection_id if latest else None
        return wanted


class AddModelForm(forms.Form):
    """A model id typed by hand (for providers without GET /models, or ids they do not list)."""

    model_id = forms.CharField(
        label="Model id",
        max_length=200,
        error_messages={"required": "model_id: type the id the provider uses, e.g. acme/chat-large."},
    )
    kind = forms.ChoiceField(label="Kind", choices=[("", "Guess from the id"), *KINDS], required=False)

    def clean_model_id(self):
        model_id = self.cleaned_data["model_id"].strip()
        if not model_id or any(c.isspace() for c in model_id):
            raise forms.ValidationError("model_id: an id has no spaces (e.g. acme/chat-large).")
        return model_id


OVERRIDE_FLAGS = [
    "vision",
    "audio",
    "video",
    "pdf",
    "tools",
    "thinking",
    "thinking_budget",
    "reasoning_effort",
    "min_p",
    "top_k",
]
MAX_CONTEXT = 10_000_000


class OverrideForm(forms.ModelForm):
    """What a model of one connection can do, as the user corrects it (kept across refreshes)."""

    context_window = forms.IntegerField(label="Context window (tokens)", min_value=1, max_value=MAX_CONTEXT)
    max_output = forms.IntegerField(label="Max output (tokens)", min_value=1, max_value=MAX_CONTEXT)

    class Meta:
        model = CatalogModel
        fields = ["kind", *OVERRIDE_FLAGS, "context_window", "max_output"]
        labels = {
            "vision": "Images",
            "audio": "Audio",
            "video": "Video",
            "pdf": "PDF",
            "tools": "Tools (function calling)",
            "thinking": "enable_thinking",
            "thinking_budget": "thinking_budget",
            "reasoning_effort": "reasoning_effort",
            "min_p": "min_p",
            "top_k": "top_k",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in ("context_window", "max_output"):
            self.fields[name].error_messages.update(
                {
                    "min_value": f"{name}: must be at least 1 token.",
                    "max_value": f"{name}: must be at most {MAX_CONTEXT} tokens.",
                    "required": f"{name}: enter a number of tokens (at least 1).",
                    "invalid": f"{name}: enter a whole number of tokens.",
                }
            )

    def clean(self):
        cleaned = super().clean()
        window, output = cleaned.get("context_window"), cleaned.get("max_output")
        if window and output and output > window:
            self.add_error("max_output", f"max_output: must be at most the context window ({window} tokens).")
        return cleaned

    def apply_to(self, entry: CatalogModel) -> CatalogModel:
        """Write the values onto the connection's own entry and remember which ones the user changed."""
        for name in self.Meta.fields:
            setattr(entry, name, self.cleaned_data[name])
        entry.edited = sorted(set(entry.edited or []) | set(self.changed_data))
        entry.save()
        return entry
