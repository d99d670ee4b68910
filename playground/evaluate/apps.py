from django.apps import AppConfig


class EvaluateConfig(AppConfig):
    name = "playground.evaluate"

    def ready(self):
        from playground.evaluate import resume, runner
        from playground.lib import detached

        detached.register_kind(runner.KIND, beat=runner.beat, sweep=runner.sweep)
        # Every server process takes up the live runs a restarted or dead process left (evaluate/resume.py).
        detached.register_service("evaluate-resume", lambda: resume.run_forever(runner.take_up, runner.KIND))
