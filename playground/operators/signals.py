from django.contrib.auth.signals import user_logged_in, user_logged_out
from django.dispatch import receiver

from playground.operators.models import SessionRecord


@receiver(user_logged_in)
def remember_session(sender, request, user, **kwargs):
    session = getattr(request, "session", None)
    if session is None:
        return
    if session.session_key is None:
        session.save()
    SessionRecord.objects.get_or_create(session_key=session.session_key, defaults={"user": user})


@receiver(user_logged_out)
def forget_session(sender, request, user, **kwargs):
    session = getattr(request, "session", None)
    if session is not None and session.session_key:
        SessionRecord.objects.filter(session_key=session.session_key).delete()
