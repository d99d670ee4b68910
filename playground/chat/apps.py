from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "playground.chat"

    def ready(self):
        from playground.chat import services, signals  # noqa: F401 (signals: receivers connect on import)
        from playground.lib import detached

        detached.register_kind(services.KIND, beat=services.beat, sweep=services.sweep)
        # A draining process closes its sockets once the events handed to them are sent (the last words, `done`).
        from playground.chat.relay import fanout
        from playground.lib import drain

        drain.before_closing(fanout.delivered)
        detached.start_runner()
