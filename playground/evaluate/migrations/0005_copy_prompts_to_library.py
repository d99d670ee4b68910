"""Each evaluation's prompt versions become the versions of a library prompt of its owner's (same numbers, texts
and dates; the user message becomes the template), its variants point at them, and every cell that has run
records the version its variant resolves to now (the pinned one, else the latest: what the last run sent unless
the template was edited since). The reverse copies the versions back (the library prompts stay)."""

from django.db import migrations

NAME_LENGTH = 100
RAN = ("done", "error", "stopped")


def unique_name(Prompt, owner_id, title: str) -> str:
    base = (title or "").strip().replace("/", "-") or "Evaluation"
    taken = set(Prompt.objects.filter(owner_id=owner_id, team=None).values_list("name", flat=True))
    name, n = base[:NAME_LENGTH], 1
    while name in taken:
        n += 1
        suffix = f" ({n})"
        name = base[: NAME_LENGTH - len(suffix)] + suffix
    return name


def forward(apps, schema_editor):
    Evaluation = apps.get_model("evaluate", "Evaluation")
    OldVersion = apps.get_model("evaluate", "PromptVersion")
    Variant = apps.get_model("evaluate", "Variant")
    Cell = apps.get_model("evaluate", "Cell")
    Prompt = apps.get_model("prompts", "Prompt")
    Version = apps.get_model("prompts", "PromptVersion")
    for evaluation in Evaluation.objects.filter(prompt=None).order_by("pk").iterator():
        prompt = Prompt.objects.create(
            owner_id=evaluation.owner_id, team=None, name=unique_name(Prompt, evaluation.owner_id, evaluation.title)
        )
        first = evaluation.variants.exclude(model="").order_by("position").first()
        model_id = first.model if first else ""
        made = {}
        for old in OldVersion.objects.filter(evaluation=evaluation).order_by("number"):
            new = Version.objects.create(
                prompt=prompt,
                number=old.number,
                author_id=evaluation.owner_id,
                message=f"Evaluation “{evaluation.title}”"[:300],
                system=old.system,
                template=old.user,
                model_id=model_id,
                connection_id=evaluation.connection_id,
            )
            Version.objects.filter(pk=new.pk).update(created=old.created)  # auto_now_add set it to now
            made[old.pk] = new
        Prompt.objects.filter(pk=prompt.pk).update(created=evaluation.created, updated=evaluation.updated)
        Evaluation.objects.filter(pk=evaluation.pk).update(prompt=prompt)  # keeps `updated` as it was
        latest = max(made.values(), key=lambda v: v.number, default=None)
        for variant in Variant.objects.filter(evaluation=evaluation):
            pinned = made.get(variant.prompt_id)
            Variant.objects.filter(pk=variant.pk).update(library_version=pinned)
            used = pinned or latest
            if used is not None:
                Cell.objects.filter(variant=variant, status__in=RAN).update(version=used)


def backward(apps, schema_editor):
    Evaluation = apps.get_model("evaluate", "Evaluation")
    OldVersion = apps.get_model("evaluate", "PromptVersion")
    Variant = apps.get_model("evaluate", "Variant")
    Version = apps.get_model("prompts", "PromptVersion")
    for evaluation in Evaluation.objects.exclude(prompt=None).order_by("pk").iterator():
        made = {}
        for version in Version.objects.filter(prompt_id=evaluation.prompt_id).order_by("number"):
            old = OldVersion.objects.create(
                evaluation=evaluation, number=version.number, system=version.system, user=version.template
            )
            OldVersion.objects.filter(pk=old.pk).update(created=version.created)
            made[version.pk] = old
        for variant in Variant.objects.filter(evaluation=evaluation).exclude(library_version=None):
            # A version of another prompt has no place among the evaluation's own: the variant takes the latest.
            Variant.objects.filter(pk=variant.pk).update(prompt=made.get(variant.library_version_id))


class Migration(migrations.Migration):
    dependencies = [("evaluate", "0004_library_prompt_fields")]

    operations = [migrations.RunPython(forward, backward)]
