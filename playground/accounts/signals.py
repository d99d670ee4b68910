from django.conf import settings
from django.db.models.signals import post_save
from django.dispatch import receiver

from playground.connections.models import ensure_local_connection


@receiver(post_save, sender=settings.AUTH_USER_MODEL)
def give_new_users_the_local_connection(sender, instance, created, **kwargs):
    if created:
        ensure_local_connection(instance)
