"""A prompt exported as JSON with all its versions and labels, and imported back: the round trip is exact (every
version's content, number, message, author's name and time; every label and where it points). An import is
checked whole before anything is saved; any error saves nothing."""

import json

from django.db import transaction
from django.utils.dateparse import parse_datetime

from playground import inputs
from playground.prompts import labels as labeling
from playground.prompts.drafts import check_draft, check_name
from playground.prompts.models import Label, Prompt, PromptVersion

FORMAT = "playground.prompt/1"
MAX_IMPORT_BYTES = 20 * 1024 * 1024
MAX_VERSIONS = 5000


def version_json(version: PromptVersion) -> dict:
    return {
        "number": version.number,
        "author": version.author.get_username() if version.author_id else "",
        "created": version.created.isoformat(),
        "message": version.message,
        "system": version.system,
        "shots": version.shots,
        "template": version.template,
        "model": version.model_id,
        "params": version.params,
        "tools": version.tools,
        "restored_from": version.restored_from,
    }


def export(prompt: Prompt) -> dict:
    return {
        "format": FORMAT,
        "name": prompt.name,
        "versions": [version_json(v) for v in prompt.versions.select_related("author").order_by("number")],
        "labels": [
            {"name": label.name, "version": label.version.number, "protected": label.protected}
            for label in prompt.labels.select_related("version").order_by("name")
        ],
    }


class ImportError_(ValueError):
    def __init__(self, errors: list[str]):
        super().__init__(" ".join(errors))
        self.errors = errors


def parse(raw: bytes | str) -> dict:
    if len(raw) > MAX_IMPORT_BYTES:
        raise ImportError_([f"file: {len(raw):,} bytes; the limit is {MAX_IMPORT_BYTES:,}."])
    try:
        data = inputs.loads(raw, field="file")
    except inputs.InputError as exc:
        raise ImportError_([f"{exc}."]) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ImportError_([f"file: not valid JSON ({str(exc)[:120]})."]) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ImportError_([f"file: not an exported prompt (its “format” must be “{FORMAT}”)."])
    return data


def _checked_versions(user, data: dict) -> list[tuple[dict, object]]:
    versions = data.get("versions")
    if not isinstance(versions, list) or not versions:
        raise ImportError_(["versions: a prompt has at least one version."])
    if len(versions) > MAX_VERSIONS:
        raise ImportError_([f"versions: at most {MAX_VERSIONS:,} (got {len(versions):,})."])
    checked, errors, numbers = [], [], set()
    for index, item in enumerate(versions):
        where = f"versions[{index}]"
        if not isinstance(item, dict):
            errors.append(f"{where}: expected an object.")
            continue
        number = item.get("number")
        if not isinstance(number, int) or isinstance(number, bool) or number < 1 or number in numbers:
            errors.append(f"{where}.number: a whole number from 1, each once.")
            continue
        numbers.add(number)
        draft, problems = check_draft(user, item)
        errors += [f"{where}.{problem}" for problem in problems]
        if draft is not None:
            checked.append((item, draft))
    if errors:
        raise ImportError_(errors[:20])
    return checked


def _checked_labels(data: dict, numbers: set[int]) -> list[dict]:
    items = data.get("labels", [])
    if not isinstance(items, list):
        raise ImportError_(["labels: expected a list."])
    errors, seen = [], set()
    for index, item in enumerate(items):
        try:
            name = labeling.check_label(item.get("name") if isinstance(item, dict) else None)
        except labeling.LabelError as exc:
            errors.append(f"labels[{index}].{exc}")
            continue
        if name in seen or item.get("version") not in numbers:
            errors.append(f"labels[{index}]: “{name}” must name a version of the file, once.")
        seen.add(name)
    if errors:
        raise ImportError_(errors)
    return items


def import_prompt(user, data: dict, team=None, name: str | None = None) -> Prompt:
    """A new prompt (the user's, or the team's) from an export; ImportError_ with every problem, nothing saved."""
    name = str(name or data.get("name") or "").strip()
    errors = check_name(user, team, name)
    if errors:
        raise ImportError_(errors)
    checked = _checked_versions(user, data)
    items = _checked_labels(data, {item["number"] for item, _ in checked})
    with transaction.atomic():
        prompt = Prompt.objects.create(owner=user, team=team, name=name)
        rows = {}
        for item, draft in sorted(checked, key=lambda pair: pair[0]["number"]):
            version = PromptVersion(
                prompt=prompt,
                number=item["number"],
                author=_author(user, team, item.get("author")),
                message=draft.message,
                system=draft.system,
                shots=draft.shots,
                template=draft.template,
                model_id=draft.model_id,
                params=draft.params,
                values=draft.values,
                tools=draft.tools,
                restored_from=item.get("restored_from") if isinstance(item.get("restored_from"), int) else None,
            )
            version.save()
            when = parse_datetime(str(item.get("created") or ""))
            if when is not None:  # the time it was made, not of the import (a queryset update skips the guard)
                type(version)._base_manager.filter(pk=version.pk).update(created=when)
            rows[version.number] = version
        for item in items:
            Label.objects.create(
                prompt=prompt, name=item["name"], version=rows[item["version"]], protected=bool(item.get("protected"))
            )
    return prompt


def _author(user, team, name):
    """The version's author when that is the importing user or a member of the team it goes to; else the importing
    user stands in (a file cannot name anyone else as the author)."""
    if team is not None and isinstance(name, str) and name:
        membership = team.memberships.select_related("user").filter(user__username=name).first()
        if membership:
            return membership.user
    return user


def dumps(prompt: Prompt) -> str:
    return json.dumps(export(prompt), indent=2, ensure_ascii=False)
