import hashlib

from django.db import migrations, models


def hash_stored_keys(apps, schema_editor):
    """Keys generated on first use were stored in plain text: keep them working, stored as their sha256."""
    ApiKey = apps.get_model("localapi", "ApiKey")
    for key in ApiKey.objects.all():
        key.digest = key.owner = hashlib.sha256(key.key.encode()).hexdigest()
        key.label = "operator (generated on first use)"
        key.save(update_fields=["digest", "owner", "label"])


class Migration(migrations.Migration):
    dependencies = [("localapi", "0001_initial")]

    operations = [
        migrations.AddField("apikey", "digest", models.CharField(max_length=64, default="")),
        migrations.AddField("apikey", "owner", models.CharField(max_length=64, default="", db_index=True)),
        migrations.AddField("apikey", "label", models.CharField(max_length=100, blank=True)),
        migrations.RunPython(hash_stored_keys, migrations.RunPython.noop),
        migrations.RemoveField("apikey", "key"),
        migrations.AlterField("apikey", "digest", models.CharField(max_length=64, unique=True)),
        migrations.AlterField("apikey", "owner", models.CharField(max_length=64, db_index=True)),
    ]
