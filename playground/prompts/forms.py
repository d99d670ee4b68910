from django import forms

from playground.catalog.chat_params import chat_params_form
from playground.catalog.forms import ModelPickerForm
from playground.lib.templating import MAX_TEMPLATE
from playground.prompts.drafts import MESSAGE_LENGTH, ROLES
from playground.prompts.models import NAME_LENGTH

EMPTY_SHOTS = 2  # blank few-shot rows the edit form offers below the kept ones


class VersionForm(forms.Form):
    """The text fields of a version (the model, the parameters and the few-shot turns are posted beside it)."""

    name = forms.CharField(label="Name", max_length=NAME_LENGTH, required=False)
    owner = forms.ChoiceField(label="Library", required=False)
    system = forms.CharField(
        label="System prompt", required=False, max_length=MAX_TEMPLATE, widget=forms.Textarea(attrs={"rows": 4})
    )
    template = forms.CharField(
        label="User message (template)",
        required=False,
        max_length=MAX_TEMPLATE,
        strip=False,
        help_text="Write {{name}} for a variable; \\{{ writes two literal braces.",
        widget=forms.Textarea(attrs={"rows": 6}),
    )
    tools = forms.CharField(
        label="Tools (JSON)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false", "placeholder": "[]"}),
    )
    message = forms.CharField(label="What changed (optional)", required=False, max_length=MESSAGE_LENGTH)

    def __init__(self, *args, teams=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["owner"].choices = [("", "My prompts"), *((str(t.pk), f"Team: {t.name}") for t in teams)]
        for name in ("system", "template"):
            self.fields[name].error_messages["max_length"] = (
                f"{name}: at most {MAX_TEMPLATE:,} characters (it has %(show_value)s)."
            )


def picker(user, data=None, initial=None) -> ModelPickerForm:
    return ModelPickerForm(data, user=user, kind="chat", initial=initial or {})


def params_for_page(model, *, data=None, stored=None):
    return chat_params_form(model, data, stored=stored if data is None else None)


def shots_from(post) -> list[dict]:
    """The few-shot rows posted (role and content lists in order); blank rows are dropped later."""
    roles, contents = post.getlist("shot_role"), post.getlist("shot_content")
    pairs = zip(roles, contents, strict=False)
    return [{"role": role if role in ROLES else role[:20], "content": text} for role, text in pairs]


def shot_rows(shots: list) -> list[dict]:
    rows = [dict(shot) for shot in shots]
    for _ in range(EMPTY_SHOTS):
        rows.append({"role": "user" if len(rows) % 2 == 0 else "assistant", "content": ""})
    return rows
