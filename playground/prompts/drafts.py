"""A draft of a prompt version checked before it is saved: every text within its limit and well-formed, the model
a chat model, the parameters parsed once by the chat panel's own parser (catalog.chat_params) and held to the
model, the tools checked as the panel checks them. Errors name the field and the limit; a draft with any error
saves nothing."""

import json
from dataclasses import dataclass, field

from django import forms
from django.db import IntegrityError, transaction

from playground.catalog.chat_params import chat_params_form, parse_tools, stored_values
from playground.catalog.models import CatalogModel
from playground.catalog.params import CHAT_PARAMS, params_for
from playground.connections.models import Connection
from playground.lib.templating import MAX_TEMPLATE, syntax_errors, variables
from playground.prompts.models import NAME_LENGTH, Prompt, PromptVersion, owned_by

ROLES = ("user", "assistant")
MAX_SHOTS = 40
MESSAGE_LENGTH = 300
PARAM_NAMES = {param.name for param in CHAT_PARAMS}


@dataclass
class Draft:
    system: str = ""
    shots: list = field(default_factory=list)
    template: str = ""
    model_id: str = ""
    connection: Connection | None = None
    params: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)  # the typed request values, as the panel's form returns them
    tools: list = field(default_factory=list)
    message: str = ""

    @property
    def variables(self) -> list[str]:
        return variables(self.system, *(shot["content"] for shot in self.shots), self.template)


def check_name(user, team, name: str, *, prompt: Prompt | None = None) -> list[str]:
    name = (name or "").strip()
    if not name:
        return ["name: give the prompt a name."]
    if len(name) > NAME_LENGTH:
        return [f"name: at most {NAME_LENGTH} characters (it has {len(name):,})."]
    if "/" in name or "\x00" in name or not name.isprintable():
        return ["name: letters, digits, spaces and punctuation other than “/”."]
    taken = owned_by(user, team).filter(name=name)
    if prompt is not None:
        taken = taken.exclude(pk=prompt.pk)
    if taken.exists():
        where = f"the library of {team.name}" if team else "your prompts"
        return [f"name: “{name}” is already a prompt in {where}; choose another name."]
    return []


def check_text(text, label: str) -> tuple[str, list[str]]:
    if not isinstance(text, str):
        return "", [f"{label}: expected text."]
    if "\x00" in text:
        return "", [f"{label}: NUL characters (\\u0000) are not allowed."]
    if len(text) > MAX_TEMPLATE:
        return "", [f"{label}: {len(text):,} characters; the limit is {MAX_TEMPLATE:,}."]
    return text, syntax_errors(text, label)


def check_shots(shots) -> tuple[list, list[str]]:
    if not isinstance(shots, list):
        return [], ["shots: expected a list of {role, content} turns."]
    if len(shots) > MAX_SHOTS:
        return [], [f"shots: at most {MAX_SHOTS} few-shot turns (got {len(shots)})."]
    clean, errors = [], []
    for index, shot in enumerate(shots):
        if not isinstance(shot, dict) or shot.get("role") not in ROLES:
            errors.append(f"shots[{index}].role: user or assistant.")
            continue
        text, problems = check_text(shot.get("content", ""), f"shots[{index}].content")
        errors += problems
        if text.strip():
            clean.append({"role": shot["role"], "content": text})
    return clean, errors


def find_model(user, connection: Connection | None, model_id: str) -> CatalogModel | None:
    """The chat model `model_id` as the connection offers it (else as any of the user's connections does, else
    the catalog's facts for that id): whose parameters and limits a version is held to."""
    model_id = (model_id or "").strip()
    if not model_id:
        return None
    connections = [connection] if connection else list(Connection.objects.for_user(user))
    for each in connections:
        found = CatalogModel.objects.for_connection(each, kind="chat", unavailable=True).filter(model_id=model_id)
        if found := found.first():
            return found
    return CatalogModel.objects.filter(model_id=model_id, kind="chat", enabled=True).first()


def _unknown_params(model, names) -> list[str]:
    taken = {param.name for param in params_for(model, CHAT_PARAMS)}
    return [
        f"{name}: {model.model_id} does not take this parameter."
        if name in PARAM_NAMES
        else f"{name}: not a parameter of the chat panel."
        for name in names
        if name not in taken
    ]


def check_params(model, *, posted=None, stored: dict | None = None) -> tuple[dict, dict, list[str]]:
    """(stored values, request values, errors) of the parameters: the panel's posted fields or stored JSON
    values, parsed by the chat panel's form for this model (once: the request values are kept as parsed)."""
    if posted is not None:
        given = [name for name in PARAM_NAMES if str(posted.get(name, "") or "").strip() not in ("", "off")]
        errors = _unknown_params(model, [n for n in given if n != "stream"])
        form = chat_params_form(model, posted)
    else:
        if not isinstance(stored, dict):
            return {}, {}, ["params: expected an object of parameter values."]
        stored = {k: v for k, v in stored.items() if v not in (None, "", [])}
        errors = _unknown_params(model, list(stored))
        form = chat_params_form(model, stored=stored)
    if not form.is_valid():
        errors += [e for name in form.errors for e in form.errors[name]]
    if errors:
        return {}, {}, errors
    kept = {k: v for k, v in stored_values(form).items() if v not in (None, "", [])}
    return kept, form.request_values(), []


def check_tools(model, tools) -> tuple[list, list[str]]:
    try:
        text = tools if isinstance(tools, str) else json.dumps(tools or [])
        parsed = parse_tools(text)
    except forms.ValidationError as exc:
        return [], exc.messages
    except (TypeError, ValueError):
        return [], ["tools: must be a JSON array of tools."]
    if parsed and not model.tools:
        return [], [f"tools: {model.model_id} does not take tools; choose a model with tools or remove them."]
    return parsed, []


def check_draft(user, data: dict, *, posted=None) -> tuple[Draft | None, list[str]]:
    """A draft from `data` (system, shots, template, model, connection, params, tools, message), or its errors.

    `posted`: the edit form's fields, whose parameters are parsed as the chat panel's form; otherwise
    `data["params"]` are stored values (an import, the API) checked as the panel checks stored values."""
    draft, errors = Draft(), []
    draft.system, problems = check_text(data.get("system", ""), "system")
    errors += problems
    draft.template, problems = check_text(data.get("template", ""), "template")
    errors += problems
    draft.shots, problems = check_shots(data.get("shots", []))
    errors += problems
    message = data.get("message", "") or ""
    if not isinstance(message, str) or "\x00" in message or len(message) > MESSAGE_LENGTH:
        errors.append(f"message: text without NUL, at most {MESSAGE_LENGTH} characters.")
    draft.message = message.strip() if isinstance(message, str) else ""
    if not draft.template.strip() and not draft.system.strip():
        errors.append("template: write the user message (or at least a system prompt).")
    draft.connection = data.get("connection")
    draft.model_id = str(data.get("model") or "").strip()
    model = find_model(user, draft.connection, draft.model_id)
    if model is None:
        errors.append(f"model: “{draft.model_id[:80]}” is not a chat model of your connections; choose one.")
        return None, errors
    draft.params, draft.values, problems = check_params(model, posted=posted, stored=data.get("params", {}))
    errors += problems
    draft.tools, problems = check_tools(model, data.get("tools", []))
    errors += problems
    return (None, errors) if errors else (draft, [])


def save_version(prompt: Prompt, draft: Draft, author, *, restored_from: int | None = None) -> PromptVersion:
    """The prompt's next version (v1, v2, …): always a new row, never a change to an existing one."""
    for _ in range(3):
        try:
            with transaction.atomic():
                latest = prompt.versions.select_for_update().order_by("-number").first()
                version = PromptVersion(
                    prompt=prompt,
                    number=(latest.number if latest else 0) + 1,
                    author=author,
                    message=draft.message,
                    system=draft.system,
                    shots=draft.shots,
                    template=draft.template,
                    model_id=draft.model_id,
                    connection=draft.connection,
                    params=draft.params,
                    values=draft.values,
                    tools=draft.tools,
                    restored_from=restored_from,
                )
                version.save()
                prompt.save(update_fields=["updated"])
                return version
        except IntegrityError:  # two saves took the same number: the later one takes the next
            continue
    raise IntegrityError("prompt version: could not take a number; try again.")


def draft_of(version: PromptVersion, *, message: str = "") -> Draft:
    """A version's content as a draft (restore, fork, import): nothing is parsed again."""
    return Draft(
        system=version.system,
        shots=list(version.shots),
        template=version.template,
        model_id=version.model_id,
        connection=version.connection,
        params=dict(version.params),
        values=dict(version.values),
        tools=list(version.tools),
        message=message,
    )
