"""A live run's claim (the process that runs it and its heartbeat) and how it was started (concurrency, whether
empty values are sent), so that another process can take it up after a restart (evaluate/resume.py)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("evaluate", "0013_run_comparison"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="concurrency",
            field=models.PositiveSmallIntegerField(default=4),
        ),
        migrations.AddField(
            model_name="run",
            name="heartbeat",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="run",
            name="send_empty",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="run",
            name="worker",
            field=models.CharField(blank=True, max_length=100),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["status"], name="run_status"),
        ),
    ]
