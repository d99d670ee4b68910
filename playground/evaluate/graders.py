"""Automatic graders of one cell's answer, configured per variant.

Regular expressions run on the `regex` module with a timeout, so a catastrophic pattern fails the grade
instead of hanging the server; JSON Schema validation is jsonschema_rs (Rust, no backtracking).
"""

import json
import re

import jsonschema_rs
import regex
from django import forms

from playground import inputs

REGEX_TIMEOUT = 0.1  # seconds per answer
MAX_PATTERN = 500
MAX_SCHEMA = 20_000
MAX_LENGTH_LIMIT = 1_000_000
KINDS = ("exact", "contains", "regex", "json", "schema", "max_length")
FENCE = re.compile(r"^\s*```[\w-]*\n(.*?)\n```\s*$", re.S)


class GradersForm(forms.Form):
    exact = forms.BooleanField(required=False, label="Exact match", help_text="The answer equals the expected output.")
    contains = forms.BooleanField(required=False, label="Contains")
    contains_text = forms.CharField(
        required=False,
        max_length=2000,
        label="Text to find",
        help_text="Blank: the row's expected output. Case-insensitive.",
    )
    regex = forms.CharField(
        required=False,
        max_length=MAX_PATTERN,
        label="Regex",
        help_text=f"Searched in the answer; {MAX_PATTERN} characters at most.",
    )
    json = forms.BooleanField(required=False, label="Valid JSON")
    schema = forms.CharField(
        required=False,
        max_length=MAX_SCHEMA,
        label="JSON Schema",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": '{"type": "object", "required": ["answer"]}'}),
    )
    max_length = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_LENGTH_LIMIT, label="Max length", help_text="Characters."
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["regex"].error_messages["max_length"] = f"regex: at most {MAX_PATTERN} characters."
        self.fields["schema"].error_messages["max_length"] = f"JSON Schema: at most {MAX_SCHEMA} characters."
        self.fields["max_length"].error_messages.update(
            min_value="max length: must be at least 1.", max_value=f"max length: must be at most {MAX_LENGTH_LIMIT}."
        )

    def clean_regex(self):
        pattern = self.cleaned_data["regex"]
        if pattern:
            try:
                regex.compile(pattern)
            except regex.error as exc:
                raise forms.ValidationError(f"regex: not a valid pattern ({exc}).") from None
        return pattern

    def clean_schema(self):
        text = self.cleaned_data["schema"].strip()
        if not text:
            return None
        try:
            schema = inputs.loads(text)
        except ValueError as exc:
            raise forms.ValidationError(f"JSON Schema: not valid JSON ({exc}).") from None
        try:
            jsonschema_rs.validator_for(schema)
        except (ValueError, jsonschema_rs.ValidationError) as exc:
            raise forms.ValidationError(f"JSON Schema: not a valid schema ({exc}).") from None
        return schema

    def config(self) -> dict:
        data = self.cleaned_data
        config = {}
        if data["exact"]:
            config["exact"] = True
        if data["contains"]:
            config["contains"] = data["contains_text"]
        if data["regex"]:
            config["regex"] = data["regex"]
        if data["json"]:
            config["json"] = True
        if data["schema"] is not None:
            config["schema"] = data["schema"]
        if data["max_length"]:
            config["max_length"] = data["max_length"]
        return config


def initial_of(config: dict) -> dict:
    """The form's initial values for a stored configuration."""
    return {
        "exact": bool(config.get("exact")),
        "contains": "contains" in config,
        "contains_text": config.get("contains") or "",
        "regex": config.get("regex", ""),
        "json": bool(config.get("json")),
        "schema": json.dumps(config["schema"], indent=1) if "schema" in config else "",
        "max_length": config.get("max_length"),
    }


def _loads(text: str):
    """The answer as JSON: as is, or the inside of one fenced code block."""
    try:
        return inputs.loads(text)
    except ValueError:
        fenced = FENCE.match(text)
        if not fenced:
            raise
        return inputs.loads(fenced.group(1))


def grade(output: str, expected: str, config: dict) -> dict:
    """{kind: {"pass": bool, "detail": str}} for each configured grader."""
    grades = {}
    if config.get("exact"):
        ok = output.strip() == expected.strip()
        grades["exact"] = {"pass": ok, "detail": "" if ok else "differs from the expected output"}
    if "contains" in config:
        needle = config["contains"] or expected
        ok = bool(needle) and needle.casefold() in output.casefold()
        grades["contains"] = {"pass": ok, "detail": "" if ok else f"does not contain {needle[:80]!r}"}
    if config.get("regex"):
        try:
            ok = regex.search(config["regex"], output, timeout=REGEX_TIMEOUT) is not None
            detail = "" if ok else "no match"
        except TimeoutError:
            ok, detail = False, f"the pattern took over {int(REGEX_TIMEOUT * 1000)} ms and was stopped"
        grades["regex"] = {"pass": ok, "detail": detail}
    parsed, json_error = None, None
    if config.get("json") or "schema" in config:
        try:
            parsed = _loads(output)
        except ValueError as exc:
            json_error = f"not valid JSON ({exc})"
    if config.get("json"):
        grades["json"] = {"pass": json_error is None, "detail": json_error or ""}
    if "schema" in config:
        if json_error:
            grades["schema"] = {"pass": False, "detail": json_error}
        else:
            errors = list(jsonschema_rs.validator_for(config["schema"]).iter_errors(parsed))
            detail = "; ".join(_schema_error(e) for e in errors[:3])
            grades["schema"] = {"pass": not errors, "detail": detail}
    if config.get("max_length"):
        ok = len(output) <= config["max_length"]
        grades["max_length"] = {
            "pass": ok,
            "detail": "" if ok else f"{len(output)} > {config['max_length']} characters",
        }
    return grades


def _schema_error(error) -> str:
    path = "/".join(str(part) for part in getattr(error, "instance_path", []) or [])
    return f"{path or '(root)'}: {error.message}"
