from django.apps import AppConfig


class ConnectionsConfig(AppConfig):
    name = "playground.connections"
