import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """The kinds' own foreign keys go: a share names its source only by (content type, row id)."""

    dependencies = [("sharing", "0007_share_source_data")]

    operations = [
        migrations.RemoveField(model_name="share", name="conversation"),
        migrations.RemoveField(model_name="share", name="rerank_run"),
        migrations.RemoveField(model_name="share", name="speech_clip"),
        migrations.RemoveField(model_name="share", name="batch"),
        migrations.RemoveField(model_name="share", name="evaluation"),
        migrations.AlterField(
            model_name="share",
            name="source_type",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="+", to="contenttypes.contenttype"
            ),
        ),
        migrations.AlterField(
            model_name="share",
            name="source_id",
            field=models.PositiveBigIntegerField(),
        ),
        migrations.AddIndex(
            model_name="share",
            index=models.Index(fields=["source_type", "source_id"], name="share_source"),
        ),
    ]
