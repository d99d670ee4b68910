from django.db import migrations, models

TERMINAL = ("completed", "failed", "expired", "cancelled")


def finished_batches_were_filed(apps, schema_editor):
    # Before the tracker, a finished batch's usage was filed when a page saw it finish: do not file it again.
    apps.get_model("batches", "Batch").objects.filter(status__in=TERMINAL).update(usage_recorded=True)


class Migration(migrations.Migration):
    dependencies = [("batches", "0001_initial")]

    operations = [
        migrations.AddField(model_name="batch", name="usage_recorded", field=models.BooleanField(default=False)),
        migrations.AddField(model_name="batch", name="copy", field=models.JSONField(blank=True, null=True)),
        migrations.RunPython(finished_batches_were_filed, migrations.RunPython.noop),
    ]
