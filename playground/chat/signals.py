"""What chat does when a connection its conversations use is deleted: each keeps a ConnectionLoss, so its page
says in words what happened and nothing is sent until another connection is picked."""

from django.core.exceptions import ObjectDoesNotExist
from django.db.models.signals import pre_delete
from django.dispatch import receiver

from playground.chat.models import ConnectionLoss, Conversation
from playground.connections.models import Connection
from playground.connections.signals import deleting_teams


@receiver(pre_delete, sender=Connection)
def remember_lost_connection(sender, instance, **kwargs):
    ids = list(Conversation.objects.filter(connection_id=instance.pk).values_list("pk", flat=True))
    if not ids:
        return
    if instance.team_id is None:  # their own connection: an older notice no longer applies
        ConnectionLoss.objects.filter(conversation_id__in=ids).delete()
        return
    try:
        team_name = instance.team.name
    except ObjectDoesNotExist:
        team_name = ""
    reason = ConnectionLoss.TEAM_DELETED if instance.team_id in deleting_teams else ConnectionLoss.DELETED
    for pk in ids:
        ConnectionLoss.objects.update_or_create(
            conversation_id=pk,
            defaults={"connection_name": instance.name, "team_name": team_name, "reason": reason},
        )
