"""The audit log of what other apps change in a team: its connections' keys, its team-only share links and its
prompts' labels."""

from django.db.models.signals import post_delete, post_init, post_save
from django.dispatch import receiver

from playground.connections.models import Connection
from playground.teams.models import Team, audit


@receiver(post_init, sender=Connection)
def remember_key(sender, instance, **kwargs):
    instance._loaded_key, instance._loaded_url = instance.encrypted_key, instance.base_url


@receiver(post_save, sender=Connection)
def key_changed(sender, instance, created, **kwargs):
    if instance.team_id and not created and instance.encrypted_key != getattr(instance, "_loaded_key", None):
        # Teams views name who did it; an edit elsewhere (the connection's own form) is logged without a name.
        actor = getattr(instance, "audit_actor", None)
        audit(instance.team, actor, "key_changed", f"Key of “{instance.name}” replaced ({instance.key_hint}).")
    if instance.team_id and not created and instance.base_url != getattr(instance, "_loaded_url", None):
        actor = getattr(instance, "audit_actor", None)
        detail = f"Base URL of “{instance.name}” changed from {instance._loaded_url} to {instance.base_url}."
        audit(instance.team, actor, "url_changed", detail)
    instance._loaded_key, instance._loaded_url = instance.encrypted_key, instance.base_url


@receiver(post_save, sender="sharing.Share")
def share_made(sender, instance, created, **kwargs):
    if created and instance.team_id:
        audit(instance.team, instance.owner, "share_made", f"{instance.owner} shared “{instance.title}” with the team.")


@receiver(post_delete, sender="sharing.Share")
def share_revoked(sender, instance, **kwargs):
    team = Team.objects.filter(pk=instance.team_id).first() if instance.team_id else None
    if team is not None:
        audit(team, instance.owner, "share_revoked", f"Team link to “{instance.title}” revoked.")


@receiver(post_save, sender="prompts.LabelMove")
def label_moved(sender, instance, created, **kwargs):
    prompt = instance.label.prompt
    if created and prompt.team_id:
        moved = f"from v{instance.from_number} " if instance.from_number else ""
        detail = f"{prompt.name}: “{instance.label.name}” moved {moved}to v{instance.to_number}"
        audit(prompt.team, instance.actor, "prompt.label", detail)


@receiver(post_save, sender="prompts.Label")
def label_protected(sender, instance, created, update_fields=None, **kwargs):
    prompt = instance.prompt
    if not created and update_fields and "protected" in update_fields and prompt.team_id:
        words = "protected" if instance.protected else "unprotected"
        audit(
            prompt.team,
            getattr(instance, "audit_actor", None),
            "prompt.label",
            f"{prompt.name}: “{instance.name}” {words}",
        )
