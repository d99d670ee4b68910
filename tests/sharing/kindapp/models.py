from django.conf import settings
from django.db import models

from playground.sharing.models import share_links


class Note(models.Model):
    shares = share_links()
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    words = models.TextField()

    def __str__(self) -> str:
        return self.words[:40]
