"""Which account a person of the identity provider is: the link from the ID token's (issuer, subject) to a user."""

from django.conf import settings
from django.db import models


class Identity(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="identities")
    issuer = models.CharField(max_length=300)
    subject = models.CharField(max_length=255)
    # The groups the provider named at the last sign-in, shown on the administration page.
    groups = models.JSONField(default=list, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    last_sign_in = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="one_user_per_subject")]

    def __str__(self) -> str:
        return f"{self.user} as {self.subject} at {self.issuer}"
