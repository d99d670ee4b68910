from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator

from playground.connections.models import Connection, origin_of
from playground.lib.guard import Refused, check_url_sync

MAX_TIMEOUT = 3600
MAX_CONCURRENCY = 256


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

    field_order = ["name", "base_url", "api_key", "include_usage", "first_token_timeout", "idle_timeout", "concurrency"]

    class Meta:
        model = Connection
        fields = ["name", "base_url", "include_usage", "first_token_timeout", "idle_timeout", "concurrency"]

    def __init__(self, *args, user=None, **kwargs):
        """`user` is who edits: a team connection's key may be replaced by the team's owner only."""
        super().__init__(*args, **kwargs)
        self.user = user
        concurrency = self.fields["concurrency"]
        concurrency.min_value, concurrency.max_value = 1, MAX_CONCURRENCY
        concurrency.widget.attrs.update(min=1, max=MAX_CONCURRENCY)
        concurrency.validators += [MinValueValidator(1), MaxValueValidator(MAX_CONCURRENCY)]
        concurrency.error_messages.update(
            min_value="concurrency: at least 1 request at once.",
            max_value=f"concurrency: at most {MAX_CONCURRENCY} requests at once.",
        )
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

    def clean(self):
        cleaned = super().clean()
        connection, key, url = self.instance, cleaned.get("api_key"), cleaned.get("base_url")
        if not connection.pk or connection.is_local:
            return cleaned
        if url and not key and origin_of(url) != connection.key_origin:
            self.add_error(
                "api_key",
                f"api_key: the Base URL now points at {origin_of(url)}, not {connection.key_origin or 'its host'}: "
                "enter the key again (a stored key is only ever sent to the host it was saved for).",
            )
        if key and connection.team_id and (self.user is None or connection.team.owner != self.user):
            self.add_error(
                "api_key",
                f"api_key: only the owner of {connection.team.name} may replace the team's key; an admin may add a "
                "connection with a key of their own.",
            )
        return cleaned

    def save(self, commit=True):
        connection = super().save(commit=False)
        if self.cleaned_data.get("api_key"):
            connection.set_key(self.cleaned_data["api_key"].strip())
        if commit:
            connection.save()
        return connection
