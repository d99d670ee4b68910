from django.apps import AppConfig


class TeamsConfig(AppConfig):
    name = "playground.teams"

    def ready(self):
        from playground.teams import signals  # noqa: F401  (the audit log of team connections and team shares)
