from django import forms

from playground.catalog.models import CatalogModel
from playground.catalog.params import CHAT_PARAMS, ParamsForm, cap_max_tokens, params_form
from playground.connections.models import Connection, Team
from playground.evaluate.models import DEFAULT_CONCURRENCY, MAX_COMMENT
from playground.evaluate.templating import MAX_TEMPLATE, syntax_errors
from playground.prompts.models import PromptVersion

# An evaluation always streams and reads the first choice: the panel leaves those two out.
EVAL_PARAMS = [param for param in CHAT_PARAMS if param.name not in ("stream", "n")]
MAX_CONCURRENCY = 16


class EvaluationForm(forms.Form):
    title = forms.CharField(max_length=100)
    connection = forms.ModelChoiceField(queryset=Connection.objects.none(), empty_label=None)
    # A team's members see its evaluations and rate their runs (Evaluation.team).
    team = forms.ModelChoiceField(
        queryset=Team.objects.none(), required=False, empty_label="Only me", label="Shared with"
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["connection"].queryset = Connection.objects.for_user(user).filter(team=None)
        self.fields["team"].queryset = Team.objects.for_user(user).order_by("name")
        self.fields["team"].help_text = "Its members see its runs and rate answers; you alone edit and run it."
        self.fields["team"].error_messages["invalid_choice"] = "team: choose one of your teams."
        self.fields["title"].error_messages["max_length"] = "title: at most 100 characters."
        if not self.fields["team"].queryset.exists():
            del self.fields["team"]


class PromptForm(forms.Form):
    system = forms.CharField(
        required=False, max_length=MAX_TEMPLATE, strip=False, widget=forms.Textarea(attrs={"rows": 3})
    )
    user = forms.CharField(
        required=False, max_length=MAX_TEMPLATE, strip=False, widget=forms.Textarea(attrs={"rows": 5})
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in ("system", "user"):
            self.fields[name].error_messages["max_length"] = f"{name} prompt: at most {MAX_TEMPLATE} characters."

    def clean_system(self):
        return self._checked("system")

    def clean_user(self):
        return self._checked("user")

    def _checked(self, name: str) -> str:
        """An unclosed `{{` is refused where it is, rather than saved and sent as literal text."""
        text = self.cleaned_data[name]
        errors = syntax_errors(text, f"{name} prompt")
        if errors:
            raise forms.ValidationError(errors)
        return text

    def clean(self):
        data = super().clean()
        if "user" in data and not (data.get("user") or "").strip():
            raise forms.ValidationError("user prompt: write the message each test case sends.")
        return data


MAX_OTHER_VERSIONS = 200  # the newest versions of the user's other library prompts a variant may pick


class VariantForm(forms.Form):
    model = forms.ChoiceField()
    prompt = forms.TypedChoiceField(coerce=int, required=False, empty_value=None, label="Prompt version")

    def __init__(self, *args, evaluation, models: list[str], user=None, current=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["model"].choices = [(m, m) for m in models]
        self.fields["model"].error_messages["invalid_choice"] = "model: choose a chat model of this connection."
        self.fields["prompt"].choices = version_choices(evaluation, user or evaluation.owner, current)
        self.fields["prompt"].error_messages["invalid_choice"] = (
            "prompt: choose a version of this evaluation's prompt or of a library prompt you can use."
        )


def version_choices(evaluation, user, current=None) -> list:
    """ "latest", the evaluation's own versions, then the newest versions of the other library prompts the user
    can use (the variant's current pick always stays listed)."""
    own = [(v.pk, f"{v.prompt.name}@v{v.number}") for v in evaluation.versions()]
    others = (
        PromptVersion.objects.for_user(user)
        .exclude(prompt_id=evaluation.prompt_id)
        .select_related("prompt", "prompt__team")
        .order_by("-created", "-pk")[:MAX_OTHER_VERSIONS]
    )
    other = [(v.pk, f"{v.prompt.name}@v{v.number} ({v.prompt.owner_label})") for v in others]
    if current is not None and current.prompt_id != evaluation.prompt_id and current.pk not in {k for k, _ in other}:
        other.insert(0, (current.pk, f"{current.prompt.name}@v{current.number}"))
    choices = [("", "latest of this evaluation's prompt")]
    if own:
        choices.append(("This evaluation's prompt", own))
    if other:
        choices.append(("Library prompts", other))
    return choices


def chat_models(connection: Connection | None) -> list[CatalogModel]:
    return list(CatalogModel.objects.for_connection(connection, kind="chat")) if connection else []


def variant_params_form(model: CatalogModel | None, data: dict | None, prefix: str | None = None) -> ParamsForm:
    """The chat parameter panel (catalog/params.py) for a variant's model; max_tokens capped by its output limit.

    Stored values are the panel's raw strings, unprefixed; `prefix` tells several panels apart on one page.
    """
    data = data if data is not None else {}
    form = params_form(model, EVAL_PARAMS, data, placeholders=True)
    form.prefix = prefix
    return cap_max_tokens(form, model)


class RunForm(forms.Form):
    concurrency = forms.IntegerField(min_value=1, max_value=MAX_CONCURRENCY, initial=DEFAULT_CONCURRENCY)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        message = f"concurrency: must be from 1 to {MAX_CONCURRENCY}."
        self.fields["concurrency"].error_messages.update(min_value=message, max_value=message, invalid=message)


class ImportForm(forms.Form):
    text = forms.CharField(required=False, strip=False, widget=forms.Textarea(attrs={"rows": 4}))
    file = forms.FileField(required=False)
    mode = forms.ChoiceField(
        choices=[("replace", "Replace the rows"), ("append", "Add to the rows")], initial="replace"
    )


class RatingForm(forms.Form):
    """A person's rating of one answer: pass or fail, a score from 1 to 5, a comment; all blank removes it."""

    verdict = forms.ChoiceField(choices=[("", "—"), ("pass", "Pass"), ("fail", "Fail")], required=False)
    score = forms.IntegerField(required=False, min_value=1, max_value=5)
    comment = forms.CharField(required=False, max_length=MAX_COMMENT)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["verdict"].error_messages["invalid_choice"] = "verdict: choose pass or fail (or leave it blank)."
        words = "score: a whole number from 1 to 5 (or leave it blank)."
        self.fields["score"].error_messages.update(min_value=words, max_value=words, invalid=words)
        self.fields["comment"].error_messages["max_length"] = f"comment: at most {MAX_COMMENT} characters."

    def values(self) -> dict:
        data = self.cleaned_data
        passed = {"pass": True, "fail": False}.get(data["verdict"])
        return {"passed": passed, "score": data["score"], "comment": data["comment"].strip()}
