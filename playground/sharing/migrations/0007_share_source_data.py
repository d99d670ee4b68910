"""Each share's source moves from its kind's own foreign key to (content type, row id), and back on a reverse.

The five keys are history: this migration names them once, so that no code of sharing has to again.
"""

from django.db import migrations
from django.db.models import F

OLD_KEYS = {  # the foreign key Share had for each source: field -> (app label, model name)
    "conversation": ("chat", "conversation"),
    "rerank_run": ("rerank", "rerankrun"),
    "speech_clip": ("speech", "speechclip"),
    "batch": ("batches", "batch"),
    "evaluation": ("evaluate", "evaluation"),
}


def to_source(apps, schema_editor):
    db = schema_editor.connection.alias
    Share = apps.get_model("sharing", "Share")
    ContentType = apps.get_model("contenttypes", "ContentType")
    for field, (app_label, model) in OLD_KEYS.items():
        source_type, _ = ContentType.objects.using(db).get_or_create(app_label=app_label, model=model)
        links = Share.objects.using(db).filter(**{f"{field}__isnull": False})
        links.update(source_type=source_type, source_id=F(f"{field}_id"))


def to_old_keys(apps, schema_editor):
    db = schema_editor.connection.alias
    Share = apps.get_model("sharing", "Share")
    ContentType = apps.get_model("contenttypes", "ContentType")
    for field, (app_label, model) in OLD_KEYS.items():
        source_type = ContentType.objects.using(db).filter(app_label=app_label, model=model).first()
        if source_type is not None:
            Share.objects.using(db).filter(source_type=source_type).update(**{f"{field}_id": F("source_id")})
    # A link to a kind the old schema did not know cannot be kept by it.
    Share.objects.using(db).filter(**{f"{field}__isnull": True for field in OLD_KEYS}).delete()


class Migration(migrations.Migration):
    dependencies = [("sharing", "0006_share_source_fields")]

    operations = [migrations.RunPython(to_source, to_old_keys)]
