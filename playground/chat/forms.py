import json
import re

from django import forms
from django.core.validators import MaxValueValidator

from playground.catalog.params import CHAT_PARAMS, ParamsForm, params_for, params_form
from playground.chat.models import CONTEXT_POLICIES

MESSAGE_LIMIT = 200_000


class ComposerForm(forms.Form):
    content = forms.CharField(
        label="Message",
        max_length=MESSAGE_LIMIT,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "Send a message (Enter sends, Shift+Enter: new line)"}),
        error_messages={"required": "Message: write something first."},
    )

    def clean_content(self):
        content = self.cleaned_data["content"]
        if not content.strip():
            raise forms.ValidationError("Message: write something first.")
        return content


class RenameForm(forms.Form):
    title = forms.CharField(label="Title", max_length=200)


class SettingsForm(forms.Form):
    connection = forms.TypedChoiceField(label="Connection", coerce=int, required=False)
    model = forms.CharField(label="Model", max_length=200, required=False)
    system_prompt = forms.CharField(label="System prompt", required=False, widget=forms.Textarea(attrs={"rows": 3}))
    context_policy = forms.ChoiceField(label="When over 10 messages", choices=CONTEXT_POLICIES, required=False)

    def __init__(self, *args, connections=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["connection"].choices = [(c.pk, c.name) for c in connections]


def stored_to_data(params: list, values: dict) -> dict:
    """Form data (as a browser would post it) for stored parameter values, defaults filling the gaps."""
    data = {}
    for param in params:
        value = values.get(param.name, param.default)
        if param.kind == "bool":
            if value:
                data[param.name] = "on"
        elif param.kind == "stops":
            data[param.name] = "\n".join(value or [])
        elif value is not None:
            data[param.name] = str(value)
    return data


def chat_params_form(model, data=None, *, stored: dict | None = None) -> ParamsForm:
    """The parameter form of a chat model: posted `data`, or the `stored` values of a conversation.

    On top of the catalog's bounds, max_tokens is capped by the model's output limit.
    """
    if data is None:
        data = stored_to_data(params_for(model, CHAT_PARAMS), stored or {})
    form = params_form(model, CHAT_PARAMS, data)
    if model is not None and "max_tokens" in form.fields and model.max_output:
        field = form.fields["max_tokens"]
        field.validators.append(MaxValueValidator(model.max_output))
        field.error_messages["max_value"] = f"max_tokens: must be at most {model.max_output} for {model.model_id}."
        field.widget.attrs["max"] = model.max_output
    return form


def stored_values(form: ParamsForm) -> dict:
    """What a valid form's values look like in Conversation.params (JSON)."""
    values = {}
    for param in form.params:
        value = form.cleaned_data.get(param.name)
        values[param.name] = bool(value) if param.kind == "bool" else value
    return values


TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_TOOLS = 128


def parse_tools(text: str) -> list:
    """The tools array from the panel's JSON editor, checked against spec 2.4a (errors name the field and limit)."""
    if not text.strip():
        return []
    try:
        tools = json.loads(text)
    except ValueError as exc:
        raise forms.ValidationError(f"tools: not valid JSON ({exc}).") from None
    if not isinstance(tools, list):
        raise forms.ValidationError("tools: must be a JSON array of tools.")
    if len(tools) > MAX_TOOLS:
        raise forms.ValidationError(f"tools: at most {MAX_TOOLS} functions are allowed (got {len(tools)}).")
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or tool.get("type") != "function":
            raise forms.ValidationError(f'tools[{i}]: must be {{"type": "function", "function": {{...}}}}.')
        if not TOOL_NAME.match(str(function.get("name", ""))):
            raise forms.ValidationError(
                f"tools[{i}].function.name: a-z, A-Z, 0-9, underscore and dash only, at most 64 characters."
            )
        if "parameters" in function and not isinstance(function["parameters"], dict):
            raise forms.ValidationError(f"tools[{i}].function.parameters: must be an object.")
    return tools
