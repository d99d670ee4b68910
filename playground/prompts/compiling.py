"""A version compiled into the chat request it stands for: its messages with the variables filled in, and its
parameters, tools and response format as the chat panel sends them (the values kept typed at save time)."""

from playground.lib.templating import render, variables

MAX_VALUE = 100_000


class CompileError(ValueError):
    """The variables do not fit the version; the message names the variable."""


def version_variables(version) -> list[str]:
    return variables(version.system, *(shot["content"] for shot in version.shots), version.template)


def check_values(version, values: dict) -> dict:
    """The variables' values as text, or CompileError naming each one that is wrong, missing or unknown."""
    names = version_variables(version)
    errors, clean = [], {}
    for name, value in values.items():
        if name not in names:
            errors.append(f"variables.{name}: the template has no {{{{{name}}}}}.")
            continue
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            errors.append(f"variables.{name}: expected text.")
            continue
        value = str(value)
        if "\x00" in value:
            errors.append(f"variables.{name}: NUL characters (\\u0000) are not allowed.")
        elif len(value) > MAX_VALUE:
            errors.append(f"variables.{name}: {len(value):,} characters; the limit is {MAX_VALUE:,}.")
        clean[name] = value
    missing = [name for name in names if name not in values]
    if missing:
        errors.append("variables: " + ", ".join(missing) + (" has" if len(missing) == 1 else " have") + " no value.")
    if errors:
        raise CompileError(" ".join(errors))
    return clean


def request_values(version) -> dict:
    """The parameters as they go in the body (what chat's request builder adds to the panel's values)."""
    values = dict(version.values)
    if values.get("enable_thinking") is False:
        values.pop("thinking_budget", None)
        values.pop("reasoning_effort", None)
    if isinstance(values.get("response_format"), str):
        values["response_format"] = {"type": values["response_format"]}
    if version.tools:
        values["tools"] = version.tools
        values["tool_choice"] = "auto"
    return values


def compile_messages(version, values: dict) -> list[dict]:
    return [{"role": m["role"], "content": render(m["content"], values)[0]} for m in version.messages()]


def compile_request(version, values: dict | None = None, *, strict: bool = True) -> dict:
    """The chat request body: {"model", "messages", ...parameters}. With `strict`, every variable needs a value
    and no other is accepted (CompileError); otherwise the unfilled ones stay as typed (a preview)."""
    values = check_values(version, values or {}) if strict else dict(values or {})
    return {"model": version.model_id, "messages": compile_messages(version, values), **request_values(version)}
