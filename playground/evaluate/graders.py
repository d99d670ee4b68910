"""Automatic graders of one cell's answer, configured per variant.

Regular expressions run on the `regex` module with a timeout, so a catastrophic pattern fails the grade
instead of hanging the server; JSON Schema validation is jsonschema_rs (Rust, no backtracking).
"""

import hashlib
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
MAX_RUBRIC = 2000
PASS_SCORE = 4  # on the 1–5 scale, a score from 4 up passes
SCALES = [("pass", "Pass / fail"), ("score", "Score 1–5")]
KINDS = ("exact", "contains", "regex", "json", "schema", "max_length", "judge")
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

    judge_rubric = forms.CharField(
        required=False,
        max_length=MAX_RUBRIC,
        label="Rubric",
        help_text="A model grades each answer against this, in words. Quote the phrases a good answer must have.",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": 'Names the capital, "Paris", in one sentence.'}),
    )
    judge_model = forms.ChoiceField(required=False, label="Judge model")
    judge_scale = forms.ChoiceField(choices=SCALES, initial="pass", required=False, label="Verdict")

    def __init__(self, *args, models: list[str] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["judge_model"].choices = [("", "— none —"), *((m, m) for m in models)]
        self.fields["judge_model"].error_messages["invalid_choice"] = (
            "judge model: choose a chat model of this connection."
        )
        self.fields["judge_rubric"].error_messages["max_length"] = f"rubric: at most {MAX_RUBRIC} characters."
        self.fields["judge_scale"].help_text = f"A score from {PASS_SCORE} up passes."
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

    def clean(self):
        data = super().clean()
        rubric, model = (data.get("judge_rubric") or "").strip(), data.get("judge_model")
        if rubric and not model and "judge_model" not in self.errors:
            self.add_error("judge_model", "judge model: choose the model that grades against the rubric.")
        if model and not rubric:
            self.add_error("judge_rubric", "rubric: write what a good answer does, for the judge model.")
        return data

    def config(self) -> dict:
        data = self.cleaned_data
        config = {}
        if data["judge_rubric"].strip() and data["judge_model"]:
            config["judge"] = {
                "rubric": data["judge_rubric"].strip(),
                "model": data["judge_model"],
                "scale": data["judge_scale"] or "pass",
            }
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
        "judge_rubric": config.get("judge", {}).get("rubric", ""),
        "judge_model": config.get("judge", {}).get("model", ""),
        "judge_scale": config.get("judge", {}).get("scale", "pass"),
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


def grade(output: str, expected: str, config: dict, earlier: dict | None = None) -> dict:
    """{kind: {"pass": bool, "detail": str}} for each configured grader.

    The judge's verdict is not made here (it calls a model: see `judge_messages` and the runner); an `earlier`
    verdict is kept while the judge's configuration is the one it was made with."""
    grades = {}
    kept = (earlier or {}).get("judge")
    if "judge" in config and kept and kept.get("of") == judge_key(config["judge"]):
        grades["judge"] = kept
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


# ---------------------------------------------------------------- the model grader


def judge_key(judge: dict) -> str:
    """A short fingerprint of the judge's configuration, stored with each verdict."""
    return hashlib.sha256(json.dumps(judge, sort_keys=True).encode()).hexdigest()[:12]


def judge_messages(judge: dict, *, prompt: str, answer: str, expected: str) -> list[dict]:
    """The judge's chat messages: what was asked and answered first, the rubric and the reply's shape last."""
    if judge.get("scale") == "score":
        shape = '{"score": <a whole number from 1 (poor) to 5 (excellent)>, "reason": "<one sentence>"}'
    else:
        shape = '{"pass": <true or false>, "reason": "<one sentence>"}'
    system = (
        "You are a grader. You judge a model's answer against a rubric, and nothing else. "
        f"Reply with one JSON object and no other text: {shape}"
    )
    material = f"The model was asked:\n<prompt>\n{prompt}\n</prompt>\n\n"
    if expected:
        material += f"The expected output was:\n<expected>\n{expected}\n</expected>\n\n"
    material += f"The model answered:\n<answer>\n{answer}\n</answer>"
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": material},
        {"role": "user", "content": f"Rubric: {judge['rubric']}\n\nReply with the JSON object only."},
    ]


JSON_OBJECT = re.compile(r"\{.*\}", re.S)


def read_verdict(judge: dict, reply: str) -> dict:
    """The judge's reply as a grade: {"pass", "detail" (its reason), "score" (on the 1–5 scale)}."""
    found = JSON_OBJECT.search(reply or "")
    try:
        data = json.loads(found.group(0)) if found else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return {"pass": False, "detail": f"the judge's reply is not a verdict: {(reply or '').strip()[:160]!r}"}
    reason = str(data.get("reason") or "").strip()[:500]
    if judge.get("scale") == "score":
        score = data.get("score")
        if isinstance(score, bool) or not isinstance(score, int | float) or not 1 <= score <= 5:
            return {"pass": False, "detail": f"the judge gave no score from 1 to 5: {json.dumps(data)[:160]}"}
        score = round(score)
        return {"pass": score >= PASS_SCORE, "score": score, "detail": reason}
    verdict = data.get("pass")
    if not isinstance(verdict, bool):
        return {"pass": False, "detail": f"the judge gave no pass or fail: {json.dumps(data)[:160]}"}
    return {"pass": verdict, "detail": reason}
