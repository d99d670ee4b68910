import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """A share points at its source generically: a content type and a row id (filled from the old keys in 0007)."""

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("sharing", "0005_shared_file_in_storage"),
    ]

    operations = [
        migrations.AddField(
            model_name="share",
            name="source_type",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="contenttypes.contenttype"
            ),
        ),
        migrations.AddField(
            model_name="share",
            name="source_id",
            field=models.PositiveBigIntegerField(null=True),
        ),
        migrations.AlterField(
            model_name="share",
            name="kind",
            field=models.CharField(
                help_text="The declared kind's name (kinds.py); set from the source.", max_length=40
            ),
        ),
    ]
