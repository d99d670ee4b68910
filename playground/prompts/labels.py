"""Labels (production, staging, any name) point at one version each. A move is one click; it is recorded on the
label's history and, for a team's prompt, in the team's audit log (teams/signals.py hears the moves). A protected
label only admins move."""

import re

from django.db import transaction

from playground.prompts.models import LABEL_LENGTH, Label, LabelMove, Prompt, PromptVersion

LABEL_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
SUGGESTED = ("production", "staging")


class LabelError(ValueError):
    pass


def check_label(name) -> str:
    name = str(name or "").strip().lower()
    if not name or len(name) > LABEL_LENGTH or not LABEL_RE.match(name):
        raise LabelError(
            f"label: lower-case letters, digits, “-”, “_” and “.”, at most {LABEL_LENGTH} characters (e.g. production)."
        )
    return name


def existing(prompt: Prompt, name) -> Label:
    """The prompt's label of that name, or LabelError in words (an unknown label is not made by a lookup)."""
    label = prompt.labels.select_related("version").filter(name=str(name or "").strip().lower()).first()
    if label is None:
        known = ", ".join(prompt.labels.values_list("name", flat=True)) or "none yet"
        raise LabelError(f"label: “{str(name)[:40]}” does not exist on {prompt.name} (its labels: {known}).")
    return label


def move(prompt: Prompt, name: str, version: PromptVersion, user, role: str) -> Label:
    """Point the label at `version` (made when new); LabelError when the user may not move it."""
    name = check_label(name)
    with transaction.atomic():
        label = prompt.labels.select_for_update().filter(name=name).first()
        if label is not None and label.protected and role != "admin":
            raise LabelError(f"label: “{name}” is protected; only the team's owner or admins move it.")
        before = label.version.number if label else None
        if label is None:
            label = Label.objects.create(prompt=prompt, name=name, version=version, moved_by=user)
        elif before != version.number:
            label.version, label.moved_by = version, user
            label.save(update_fields=["version", "moved_by", "moved"])
        else:
            return label
        LabelMove.objects.create(label=label, to_number=version.number, from_number=before, actor=user)
    return label


def protect(prompt: Prompt, name: str, protected: bool, user, role: str) -> Label:
    if role != "admin":
        raise LabelError("label: only the team's owner or admins protect a label.")
    label = existing(prompt, name)
    label.protected, label.audit_actor = protected, user
    label.save(update_fields=["protected"])
    return label


def by_version(prompt: Prompt) -> dict[int, list[Label]]:
    shown: dict[int, list[Label]] = {}
    for label in prompt.labels.select_related("version"):
        shown.setdefault(label.version.number, []).append(label)
    return shown
