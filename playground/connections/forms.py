from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator

from playground.connections.models import Connection
from playground.lib.guard import Refused, check_url_sync

MAX_TIMEOUT = 3600


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

    field_order = ["name", "base_url", "api_key", "include_usage", "first_token_timeout", "idle_timeout"]

    class Meta:
        model = Connection
        fields = ["name", "base_url", "include_usage", "first_token_timeout", "idle_timeout"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in ("first_token_timeout", "idle_timeout"):
            field = self.fields[name]
            field.required = False
            field.min_value, field.max_value = 1, MAX_TIMEOUT
            field.widget.attrs.update(min=1, max=MAX_TIMEOUT)
            field.validators += [MinValueValidator(1), MaxValueValidator(MAX_TIMEOUT)]
            field.error_messages.update(
                min_value=f"{name}: must be at least 1 second.",
                max_value=f"{name}: must be at most {MAX_TIMEOUT} seconds.",
            )
        if self.instance.pk:
            self.fields["api_key"].required = False
            self.fields["api_key"].help_text = f"Leave empty to keep the current key ({self.instance.key_hint})."

    def _timeout(self, name: str) -> int:
        value = self.cleaned_data.get(name)
        return Connection._meta.get_field(name).default if value is None else value

    def clean_first_token_timeout(self):
        return self._timeout("first_token_timeout")

    def clean_idle_timeout(self):
        return self._timeout("idle_timeout")

    def clean_base_url(self):
        url = self.cleaned_data["base_url"].strip().rstrip("/")
        if not url.endswith("/v1"):
            raise forms.ValidationError("base_url: the API root must end in /v1 (e.g. https://api.example.com/v1).")
        try:
            check_url_sync(url)
        except Refused as error:
            raise forms.ValidationError(f"base_url: {error.message}") from None
        return url

    def save(self, commit=True):
        connection = super().save(commit=False)
        if self.cleaned_data.get("api_key"):
            connection.set_key(self.cleaned_data["api_key"].strip())
        if commit:
            connection.save()
        return connection
