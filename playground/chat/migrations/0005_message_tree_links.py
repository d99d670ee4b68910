"""Existing conversations were linear: each message follows the one before it (by id), and all are selected."""

from django.db import migrations


def link(apps, schema_editor):
    Message = apps.get_model("chat", "Message")
    Conversation = apps.get_model("chat", "Conversation")
    for conversation_id in Conversation.objects.values_list("pk", flat=True).iterator():
        previous, changed = None, []
        for message in Message.objects.filter(conversation_id=conversation_id).order_by("pk").only("pk", "parent"):
            message.parent_id, message.selected = previous, True
            changed.append(message)
            previous = message.pk
        Message.objects.bulk_update(changed, ["parent", "selected"], batch_size=500)


class Migration(migrations.Migration):
    dependencies = [("chat", "0004_message_tree")]

    operations = [migrations.RunPython(link, migrations.RunPython.noop)]
