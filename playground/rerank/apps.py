from django.apps import AppConfig


class RerankConfig(AppConfig):
    name = "playground.rerank"
