from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "playground.chat"

    def ready(self):
        from playground.chat import signals  # noqa: F401 (receivers connect on import)
        from playground.chat.relay import fanout, recovery
        from playground.chat.relay.generation import KIND
        from playground.lib import detached, drain

        detached.register_kind(KIND, beat=recovery.beat, sweep=recovery.sweep)
        # A draining process closes its sockets once the events handed to them are sent (the last words, `done`).
        drain.before_closing(fanout.delivered)
        detached.start_runner()
