from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("localapi", "0002_hashed_keys")]

    operations = [migrations.AddField("batch", "storage", models.CharField(max_length=255, blank=True))]
