from django import forms

from playground.teams.models import INVITE_DELTAS, INVITE_EXPIRY_CHOICES

MAX_BUDGET = 1_000_000_000


class TeamForm(forms.Form):
    name = forms.CharField(
        max_length=100, error_messages={"required": "name: give the team a name (at most 100 characters)."}
    )

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("name: give the team a name (at most 100 characters).")
        return name


class InviteForm(forms.Form):
    expiry = forms.ChoiceField(choices=INVITE_EXPIRY_CHOICES, initial="7d", label="Expires after")
    uses = forms.ChoiceField(
        choices=[("single", "One person"), ("multi", "Anyone with the link until it expires")],
        initial="single",
        label="Can be used by",
    )

    @property
    def delta(self):
        return INVITE_DELTAS[self.cleaned_data["expiry"]]


class BudgetForm(forms.Form):
    monthly_token_budget = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_BUDGET,
        label="Monthly token budget",
        help_text="Prompt + completion tokens per calendar month; empty for no limit.",
        error_messages={
            "min_value": "monthly_token_budget: must be at least 0 tokens.",
            "max_value": f"monthly_token_budget: must be at most {MAX_BUDGET:,} tokens.",
            "invalid": "monthly_token_budget: enter a whole number of tokens, or leave it empty for no limit.",
        },
    )


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=[("admin", "Admin"), ("member", "Member")])


class TransferForm(forms.Form):
    member = forms.TypedChoiceField(coerce=int, label="New owner")

    def __init__(self, *args, members=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["member"].choices = [(m.pk, m.user.get_username()) for m in members]
        self.fields["member"].error_messages["invalid_choice"] = "member: choose one of the team's other members."
