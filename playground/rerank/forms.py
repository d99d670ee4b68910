from django import forms

from playground.catalog.forms import ModelPickerForm
from playground.catalog.models import CatalogModel
from playground.catalog.params import RERANK_PARAMS, params_form
from playground.rerank import documents as docs
from playground.rerank.models import RerankRun


class RerankForm(ModelPickerForm):
    """Connection, model, query and documents; the model's parameters are a separate ParamsForm (`params`)."""

    model_kind = "rerank"

    def history(self):
        return RerankRun.objects.for_user(self.user)

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
        help_text="A .txt file (one document per line), a .csv file (its “text” column, else its first) "
        "or a .jsonl file (each line's “text” or “document” field).",
        widget=forms.ClearableFileInput(attrs={"accept": ".txt,.csv,.jsonl,.ndjson"}),
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, user=user, **kwargs)
        self.params = params_form(
            self.chosen_model, RERANK_PARAMS, self.data if self.is_bound else None, self.param_initial()
        )

    def param_initial(self) -> dict:
        return self.initial.get("params") or {}

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
