from django.apps import AppConfig


class OperatorsConfig(AppConfig):
    name = "playground.operators"

    def ready(self):
        from playground.operators import signals  # noqa: F401  (sessions remembered per user)
