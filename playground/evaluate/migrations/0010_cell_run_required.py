import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """Every cell belongs to a run (0009 put the old ones in run 1); the thumb and note live on as ratings."""

    dependencies = [("evaluate", "0009_cells_into_first_run")]

    operations = [
        migrations.RemoveField(model_name="cell", name="thumb"),
        migrations.RemoveField(model_name="cell", name="note"),
        migrations.AlterField(
            model_name="cell",
            name="run",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="cells", to="evaluate.run"
            ),
        ),
    ]
