from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "playground.chat"

    def ready(self):
        from playground.chat import services, signals  # noqa: F401 (signals: receivers connect on import)
        from playground.lib import detached

        detached.register_kind(services.KIND, beat=services.beat, sweep=services.sweep)
        detached.start_runner()
