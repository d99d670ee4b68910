from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import models
from django.shortcuts import get_object_or_404

from playground.connections import crypto
from playground.upstream.client import Endpoint


class ConnectionQuerySet(models.QuerySet):
    def for_user(self, user):
        return self.filter(owner=user)


class Connection(models.Model):
    """A provider a user can call: a base URL (the API root ending in /v1) and an encrypted API key.

    The built-in Local connection (is_local) points at the embedded local API of this same server;
    its URL and key come from the settings at call time.
    """

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="connections")
    name = models.CharField(max_length=100)
    base_url = models.URLField(max_length=500, blank=True)
    is_local = models.BooleanField(default=False)
    encrypted_key = models.TextField(blank=True)
    key_hint = models.CharField(max_length=16, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    last_tested = models.DateTimeField(null=True, blank=True)
    last_test_ok = models.BooleanField(null=True)
    last_test_message = models.CharField(max_length=500, blank=True)

    objects = ConnectionQuerySet.as_manager()

    class Meta:
        ordering = ["-is_local", "name"]

    def __str__(self) -> str:
        return self.name

    def set_key(self, raw: str) -> None:
        self.encrypted_key = crypto.encrypt(raw)
        self.key_hint = crypto.mask(raw)

    def get_key(self) -> str:
        if self.is_local:
            from playground.localapi.keys import default_key

            return default_key()
        return crypto.decrypt(self.encrypted_key)

    @property
    def masked_key(self) -> str:
        if self.is_local:
            return crypto.mask(self.get_key())
        return self.key_hint

    @property
    def url(self) -> str:
        return settings.LOCAL_API_BASE_URL if self.is_local else self.base_url

    def endpoint(self) -> Endpoint:
        return Endpoint(base_url=self.url, api_key=self.get_key(), trusted=self.is_local)

    async def aendpoint(self) -> Endpoint:
        return await sync_to_async(self.endpoint)()


def get_connection(request, pk) -> Connection:
    """The user's connection, or 404 for anyone else's."""
    return get_object_or_404(Connection.objects.for_user(request.user), pk=pk)


def ensure_local_connection(user) -> Connection:
    connection, _ = Connection.objects.get_or_create(owner=user, is_local=True, defaults={"name": "Local"})
    return connection
