from django import forms

from playground.connections.models import Connection
from playground.upstream.errors import UpstreamError
from playground.upstream.guard import check_url_sync


class ConnectionForm(forms.ModelForm):
    base_url = forms.URLField(
        label="Base URL",
        max_length=500,
        assume_scheme="https",
        help_text="The API root, ending in /v1 (e.g. https://api.example.com/v1).",
    )
    api_key = forms.CharField(
        label="API key",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Stored encrypted; shown only masked.",
    )

    class Meta:
        model = Connection
        fields = ["name", "base_url"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["api_key"].required = False
            self.fields["api_key"].help_text = f"Leave empty to keep the current key ({self.instance.key_hint})."

    def clean_base_url(self):
        url = self.cleaned_data["base_url"].strip().rstrip("/")
        if not url.endswith("/v1"):
            raise forms.ValidationError("base_url: the API root must end in /v1 (e.g. https://api.example.com/v1).")
        try:
            check_url_sync(url)
        except UpstreamError as error:
            raise forms.ValidationError(f"base_url: {error.message}") from None
        return url

    def save(self, commit=True):
        connection = super().save(commit=False)
        if self.cleaned_data.get("api_key"):
            connection.set_key(self.cleaned_data["api_key"].strip())
        if commit:
            connection.save()
        return connection
