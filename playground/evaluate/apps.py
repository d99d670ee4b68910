from django.apps import AppConfig


class EvaluateConfig(AppConfig):
    name = "playground.evaluate"

    def ready(self):
        from playground.evaluate import runner
        from playground.lib import detached

        detached.register_kind(runner.KIND, beat=runner.beat, sweep=runner.sweep)
