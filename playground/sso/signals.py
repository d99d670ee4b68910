"""What single sign-on tells the apps above it: the administration page's audit log listens (sso never imports it)."""

from django.dispatch import Signal

# Sent when sign-in makes or links an account, or refuses one: `action`, `detail`, and `subject` (the account, or
# None for a refusal before any account).
account_event = Signal()
