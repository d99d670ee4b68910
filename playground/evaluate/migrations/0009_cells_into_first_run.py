from collections import Counter

from django.db import migrations

LABELS = "ABCD"


def _label(position: int) -> str:
    return LABELS[position] if position < len(LABELS) else str(position + 1)


def forwards(apps, schema_editor):
    """Each evaluation's cells become its run 1 (started by its owner, with its variants as they are now), and each
    thumb or note becomes a rating by the owner. An evaluation whose cells never ran keeps no run: its empty
    placeholder cells go (a run makes its own cells now)."""
    Evaluation, Run, Cell, Rating = (apps.get_model("evaluate", n) for n in ("Evaluation", "Run", "Cell", "Rating"))
    Variant = apps.get_model("evaluate", "Variant")
    PromptVersion = apps.get_model("prompts", "PromptVersion")
    for evaluation in Evaluation.objects.all().iterator():
        cells = Cell.objects.filter(evaluation=evaluation)
        ran = cells.exclude(status="empty", thumb=None, note="")
        if not ran.exists():
            cells.delete()
            continue
        latest = PromptVersion.objects.filter(prompt_id=evaluation.prompt_id).order_by("-number").first()
        snapshot = []
        for variant in Variant.objects.filter(evaluation=evaluation).order_by("position", "pk"):
            # The version its cells were sent with (the most common one), else the one it would send now.
            sent = Counter(cells.filter(variant=variant).exclude(version=None).values_list("version_id", flat=True))
            version_id = sent.most_common(1)[0][0] if sent else (variant.prompt_id or (latest.pk if latest else None))
            version = PromptVersion.objects.filter(pk=version_id).select_related("prompt").first()
            snapshot.append(
                {
                    "label": _label(variant.position),
                    "variant": variant.pk,
                    "model": variant.model,
                    "params": variant.params,
                    "prompt_version": version.pk if version else None,
                    "prompt_ref": f"{version.prompt.name}@v{version.number}" if version else "",
                    "graders": variant.graders,
                }
            )
        sources = Counter(ran.exclude(source="").values_list("source", flat=True))
        heartbeats = [h for h in ran.values_list("heartbeat", flat=True) if h]
        run = Run.objects.create(
            evaluation=evaluation,
            number=1,
            started_by_id=evaluation.owner_id,
            started=min(heartbeats) if heartbeats else evaluation.updated,
            ended=evaluation.last_run_ended or (max(heartbeats) if heartbeats else evaluation.updated),
            source=sources.most_common(1)[0][0] if sources else "live",
            status="done",
            scope="all",
            cells_run=evaluation.last_run_cells or ran.count(),
            wall_ms=evaluation.last_run_ms,
            variants=snapshot,
            batch_id=evaluation.batch_id if sources.get("batch") else None,
        )
        cells.update(run=run)
        Rating.objects.bulk_create(
            Rating(
                cell=cell,
                rater_id=evaluation.owner_id,
                passed=None if cell.thumb is None else cell.thumb > 0,
                comment=cell.note[:1000],
            )
            for cell in cells.exclude(thumb=None, note="")
        )


def backwards(apps, schema_editor):
    """Back to one cell per row × variant: the latest run's cells stay (the owner's rating as its thumb and note),
    earlier runs' cells go, and rows × variants that no run filled get an empty cell."""
    Evaluation, Run, Cell, Rating = (apps.get_model("evaluate", n) for n in ("Evaluation", "Run", "Cell", "Rating"))
    TestCase, Variant = apps.get_model("evaluate", "TestCase"), apps.get_model("evaluate", "Variant")
    for evaluation in Evaluation.objects.all().iterator():
        latest = Run.objects.filter(evaluation=evaluation).order_by("-number").first()
        Cell.objects.filter(evaluation=evaluation).exclude(run=latest).delete()
        for rating in Rating.objects.filter(cell__run=latest, rater_id=evaluation.owner_id).select_related("cell"):
            thumb = None if rating.passed is None else (1 if rating.passed else -1)
            Cell.objects.filter(pk=rating.cell_id).update(thumb=thumb, note=rating.comment[:500])
        Cell.objects.filter(evaluation=evaluation).update(run=None)
        cases = TestCase.objects.filter(evaluation=evaluation).values_list("pk", flat=True)
        variants = Variant.objects.filter(evaluation=evaluation).values_list("pk", flat=True)
        have = set(Cell.objects.filter(evaluation=evaluation).values_list("case_id", "variant_id"))
        Cell.objects.bulk_create(
            Cell(evaluation=evaluation, case_id=c, variant_id=v) for c in cases for v in variants if (c, v) not in have
        )
    Run.objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("evaluate", "0008_runs_and_ratings"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
