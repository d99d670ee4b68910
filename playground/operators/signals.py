from django.contrib.auth.signals import user_logged_in, user_logged_out
from django.contrib.sessions.models import Session
from django.dispatch import receiver
from django.utils import timezone

from playground.operators.models import SessionRecord, record
from playground.sso.signals import account_event


@receiver(user_logged_in)
def remember_session(sender, request, user, **kwargs):
    session = getattr(request, "session", None)
    if session is None:
        return
    if session.session_key is None:
        session.save()
    SessionRecord.objects.get_or_create(session_key=session.session_key, defaults={"user": user})
    # The user's records of sessions that expired or were cleared meanwhile go, so the table does not grow.
    live = Session.objects.filter(expire_date__gt=timezone.now()).values("session_key")
    SessionRecord.objects.filter(user=user).exclude(session_key__in=live).delete()


@receiver(user_logged_out)
def forget_session(sender, request, user, **kwargs):
    session = getattr(request, "session", None)
    if session is not None and session.session_key:
        SessionRecord.objects.filter(session_key=session.session_key).delete()


@receiver(account_event)
def audit_single_sign_on(sender, action, detail, subject, **kwargs):
    record(action, detail, subject=subject)
