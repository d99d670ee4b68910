from django.apps import AppConfig


class LocalapiConfig(AppConfig):
    name = "playground.localapi"
