import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    """Runs are kept: a Run per run of the grid, each with its own cells; people's ratings of a run's cells.
    Cell.run is nullable here only until 0009 has put every existing cell in its evaluation's run 1."""

    dependencies = [
        ("batches", "0001_initial"),
        ("evaluate", "0007_evaluation_dataset_version"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Run",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("number", models.PositiveIntegerField()),
                ("started", models.DateTimeField(default=django.utils.timezone.now)),
                ("ended", models.DateTimeField(blank=True, null=True)),
                ("source", models.CharField(default="live", max_length=8)),
                ("status", models.CharField(default="running", max_length=16)),
                ("scope", models.CharField(default="all", max_length=8)),
                ("cells_run", models.PositiveIntegerField(default=0)),
                ("wall_ms", models.PositiveIntegerField(blank=True, null=True)),
                ("variants", models.JSONField(blank=True, default=list)),
                (
                    "batch",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="batches.batch",
                    ),
                ),
                (
                    "evaluation",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="runs", to="evaluate.evaluation"
                    ),
                ),
                (
                    "started_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-number"],
                "constraints": [models.UniqueConstraint(fields=("evaluation", "number"), name="unique_run_number")],
            },
        ),
        migrations.AddField(
            model_name="cell",
            name="run",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.CASCADE, related_name="cells", to="evaluate.run"
            ),
        ),
        migrations.RemoveConstraint(model_name="cell", name="unique_cell"),
        migrations.AddConstraint(
            model_name="cell",
            constraint=models.UniqueConstraint(fields=("run", "case", "variant"), name="unique_run_cell"),
        ),
        migrations.CreateModel(
            name="Rating",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("passed", models.BooleanField(blank=True, null=True)),
                ("score", models.PositiveSmallIntegerField(blank=True, null=True)),
                ("comment", models.CharField(blank=True, max_length=1000)),
                ("created", models.DateTimeField(auto_now_add=True)),
                ("updated", models.DateTimeField(auto_now=True)),
                (
                    "cell",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="ratings", to="evaluate.cell"
                    ),
                ),
                (
                    "rater",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to=settings.AUTH_USER_MODEL
                    ),
                ),
            ],
            options={
                "ordering": ["created", "pk"],
                "constraints": [
                    models.UniqueConstraint(fields=("cell", "rater"), name="one_rating_per_person"),
                    models.CheckConstraint(
                        condition=models.Q(
                            ("score__isnull", True), models.Q(("score__gte", 1), ("score__lte", 5)), _connector="OR"
                        ),
                        name="rating_score_1_5",
                    ),
                ],
            },
        ),
    ]
