from django import forms

from playground.sharing.models import EXPIRY_CHOICES, KEEP, Share


class ShareForm(forms.Form):
    visibility = forms.ChoiceField(choices=Share.VISIBILITIES, initial=Share.ANYONE, widget=forms.RadioSelect)
    team = forms.ModelChoiceField(
        queryset=Share._meta.get_field("team").related_model.objects.none(),
        required=False,
        label="Team (for “Team members only”)",
        empty_label="—",
    )
    expiry = forms.ChoiceField(choices=EXPIRY_CHOICES, initial="7d", label="Expires after")
    live = forms.BooleanField(required=False, label="Live: viewers follow new turns and answers as they stream")

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        # The user's teams, read through the user (sharing never imports teams).
        teams = self.fields["team"].queryset
        self.fields["team"].queryset = teams.model.objects.for_user(user) if user else teams
        self.fields["team"].error_messages["invalid_choice"] = "team: choose one of your teams."

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("visibility") == Share.TEAM and not cleaned.get("team"):
            self.add_error("team", "team: choose the team whose members may open the link.")
        if cleaned.get("visibility") != Share.TEAM:
            cleaned["team"] = None
        return cleaned


class LinkForm(ShareForm):
    """An existing link's settings, changed at the same URL."""

    title = forms.CharField(max_length=200, label="Title")
    field_order = ["title", "visibility", "team", "expiry", "live"]

    def __init__(self, *args, share: Share, **kwargs):
        super().__init__(*args, **kwargs)
        expires = f"expires {share.expires:%b %-d, %H:%M}" if share.expires else "never expires"
        state = "expired" if share.expired else expires
        self.fields["expiry"].choices = [(KEEP, f"Keep as it is ({state})"), *EXPIRY_CHOICES]
        self.fields["expiry"].initial = KEEP  # an edit changes only what the owner changes
        self.fields["expiry"].label = "Expires"
        self.fields["title"].error_messages["max_length"] = "title: at most 200 characters."
        self.fields["title"].error_messages["required"] = "title: write a title for the link."


class ForkForm(forms.Form):
    connection = forms.TypedChoiceField(coerce=int, label="Continue with connection")

    def __init__(self, *args, connections=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["connection"].choices = [(c.pk, c.name) for c in connections]
