from django.apps import AppConfig


class SpeechConfig(AppConfig):
    name = "playground.speech"

    def ready(self):
        from playground.lib import detached
        from playground.speech import services

        detached.register_kind(services.KIND, beat=services.beat, sweep=services.sweep)
        detached.start_runner()
