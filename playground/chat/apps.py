from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "playground.chat"

    def ready(self):
        from playground.chat import signals  # noqa: F401 (receivers connect on import)
        from playground.chat.relay import recovery
        from playground.chat.relay.generation import KIND
        from playground.lib import detached

        detached.register_kind(KIND, beat=recovery.beat, sweep=recovery.sweep)
        detached.start_runner()
