from django import forms

from playground.catalog.models import CatalogModel
from playground.catalog.params import RERANK_PARAMS, params_form
from playground.connections.models import Connection
from playground.rerank import documents as docs


class RerankForm(forms.Form):
    """Connection, model, query and documents; the model's parameters are a separate ParamsForm (`params`)."""

    connection = forms.ModelChoiceField(queryset=Connection.objects.none(), empty_label=None)
    model = forms.ChoiceField(error_messages={"invalid_choice": "model: choose a rerank model of this connection."})
    query = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "What are you looking for?"}),
        error_messages={"required": "query: required, at least 1 character."},
    )
    documents = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 10, "placeholder": "One document per line", "spellcheck": "false"}),
    )
    documents_format = forms.ChoiceField(choices=docs.FORMATS, initial="lines", label="Pasted as")
    documents_file = forms.FileField(
        required=False,
        label="Or upload a file",
        help_text=".txt (one per line), .csv (first column or a `text` column), .jsonl (`text` or `document`).",
        widget=forms.ClearableFileInput(attrs={"accept": ".txt,.csv,.jsonl,.ndjson"}),
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["connection"].queryset = Connection.objects.for_user(user)
        self.chosen_connection = self._selected_connection()
        self.models = (
            list(CatalogModel.objects.for_connection(self.chosen_connection, kind="rerank"))
            if self.chosen_connection
            else []
        )
        self.fields["model"].choices = [(m.model_id, m.model_id) for m in self.models]
        self.chosen_model = self._selected_model()
        if self.chosen_connection:
            self.initial.setdefault("connection", self.chosen_connection.pk)
        if self.chosen_model:
            self.initial["model"] = self.chosen_model.model_id
        self.params = params_form(
            self.chosen_model, RERANK_PARAMS, self.data if self.is_bound else None, self.param_initial()
        )

    def param_initial(self) -> dict:
        return self.initial.get("params") or {}

    def _selected_connection(self) -> Connection | None:
        queryset = self.fields["connection"].queryset
        wanted = self.data.get("connection") if self.is_bound else self.initial.get("connection")
        if wanted:
            try:
                found = queryset.filter(pk=int(getattr(wanted, "pk", wanted))).first()
            except (TypeError, ValueError):
                found = None
            if found:
                return found
        return queryset.first()

    def _selected_model(self) -> CatalogModel | None:
        wanted = self.data.get("model") if self.is_bound else self.initial.get("model")
        for model in self.models:
            if model.model_id == wanted:
                return model
        return self.models[0] if self.models else None

    def clean(self):
        cleaned = super().clean()
        upload = cleaned.get("documents_file")
        try:
            if upload:
                cleaned["document_list"] = docs.parse_upload(upload.name, upload.read())
            elif (cleaned.get("documents") or "").strip():
                cleaned["document_list"] = docs.parse(cleaned["documents"], cleaned.get("documents_format") or "lines")
            else:
                self.add_error("documents", "documents: at least 1 document is required (paste them or upload a file).")
        except docs.DocumentsError as exc:
            self.add_error("documents_file" if upload else "documents", str(exc))
        return cleaned

    def is_valid(self) -> bool:
        own = super().is_valid()
        return self.params.is_valid() and own


class CompareForm(forms.Form):
    model = forms.ChoiceField(error_messages={"invalid_choice": "model: choose another rerank model."})

    def __init__(self, *args, run, **kwargs):
        super().__init__(*args, **kwargs)
        models = CatalogModel.objects.for_connection(run.connection, kind="rerank") if run.connection else []
        self.models = {m.model_id: m for m in models if m.model_id != run.model}
        self.fields["model"].choices = [(model_id, model_id) for model_id in self.models]
