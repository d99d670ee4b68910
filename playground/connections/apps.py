from django.apps import AppConfig


class ConnectionsConfig(AppConfig):
    name = "playground.connections"

    def ready(self):
        from playground.connections import checks  # noqa: F401  (registers the encryption key check)
