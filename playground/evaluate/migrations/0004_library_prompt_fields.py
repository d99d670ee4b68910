import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """An evaluation's template moves to a library prompt: the new keys, filled by 0005."""

    dependencies = [
        ("evaluate", "0003_evaluation_concurrency"),
        ("prompts", "0001_prompts_versions_labels_tokens"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluation",
            name="prompt",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="evaluations",
                to="prompts.prompt",
            ),
        ),
        migrations.AddField(
            model_name="variant",
            name="library_version",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="evaluation_variants",
                to="prompts.promptversion",
            ),
        ),
        migrations.AddField(
            model_name="cell",
            name="version",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="prompts.promptversion",
            ),
        ),
    ]
