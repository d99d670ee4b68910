"""Importing a conversation: a JSON file or pasted JSON."""

from django import forms


class ImportForm(forms.Form):
    file = forms.FileField(required=False, label="A conversation exported as JSON")
    text = forms.CharField(
        required=False,
        label="Or paste JSON: an export, or an OpenAI messages array",
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false", "class": "mono"}),
    )

    def clean(self):
        cleaned = super().clean()
        if not cleaned.get("file") and not (cleaned.get("text") or "").strip():
            raise forms.ValidationError("file: choose a JSON file, or paste JSON below.")
        return cleaned
