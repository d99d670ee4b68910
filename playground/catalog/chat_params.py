"""The chat parameter panel's parser: posted fields or stored JSON values to typed request values, and the tools
array checked against spec 2.4a. Lower than chat so that every surface that keeps a chat setup (chat's panel,
prompts, imports) parses it once, the same way, without importing chat."""

import json
import re

from django import forms

from playground import inputs
from playground.catalog.params import CHAT_PARAMS, ParamsForm, cap_max_tokens, params_for, params_form, stored_data


def stored_to_data(params: list, values: dict) -> tuple[dict, dict]:
    """Form data (as a browser would post it) for stored parameter values, and the problems of the values that
    are not of their parameter's type (shown on their fields, in words); what the user never set stays empty
    (only parameters sent in every request, like stream, take their default)."""
    data, problems = {}, {}
    values = values if isinstance(values, dict) else {}
    for param in params:
        try:
            value = stored_data(param, values.get(param.name, param.default if param.always else None))
        except ValueError as exc:
            problems[param.name] = str(exc)
            continue
        if value is not None:
            data[param.name] = value
    return data, problems


def imported_params(values: dict) -> tuple[dict, list[str]]:
    """Parameters from outside (an import) checked exactly as the panel checks them: (what to store, errors).

    Every parameter any chat model has is accepted (the model may change); each error names its field."""
    names = {param.name for param in CHAT_PARAMS}
    errors = [f"{name}: not a parameter of the chat panel." for name in values if name not in names | {"tools"}]
    params = {}
    if "tools" in values:
        try:
            params["tools"] = parse_tools(json.dumps(values["tools"]))
        except forms.ValidationError as exc:
            errors += exc.messages
    data, problems = stored_to_data(CHAT_PARAMS, values)
    form = ParamsForm(data, params=CHAT_PARAMS, placeholders=True, problems=problems)
    if not form.is_valid():
        errors += [e for name in form.errors for e in form.errors[name]]
    else:
        params.update({k: v for k, v in stored_values(form).items() if k in values})
    return params, errors


def chat_params_form(model, data=None, *, stored: dict | None = None) -> ParamsForm:
    """The parameter form of a chat model: posted `data`, or the `stored` values of a conversation (a stored value
    that is not valid shows as an error on its field).

    On top of the catalog's bounds, max_tokens is capped by the model's output limit.
    """
    problems = None
    if data is None:
        data, problems = stored_to_data(params_for(model, CHAT_PARAMS), stored or {})
    form = params_form(model, CHAT_PARAMS, data, placeholders=True, problems=problems)
    return cap_max_tokens(form, model)


def stored_values(form: ParamsForm) -> dict:
    """What a valid form's values look like in Conversation.params (JSON)."""
    values = {}
    for param in form.params:
        value = form.cleaned_data.get(param.name)
        values[param.name] = bool(value) if param.kind == "bool" and param.always else value
    return values


TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_TOOLS = 128


def parse_tools(text: str) -> list:
    """The tools array from the panel's JSON editor, checked against spec 2.4a (errors name the field and limit)."""
    if not text.strip():
        return []
    try:
        tools = inputs.loads(text, field="tools")
    except inputs.InputError as exc:
        raise forms.ValidationError(f"{exc}.") from None
    except json.JSONDecodeError as exc:
        # Where, not the parser's own words: the browser's parser words it differently (static/js/chat/tools.js).
        raise forms.ValidationError(f"tools: not valid JSON at line {exc.lineno}, column {exc.colno}.") from None
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
