from django.apps import AppConfig


class BatchesConfig(AppConfig):
    name = "playground.batches"

    def ready(self):
        from playground.batches import tracker
        from playground.lib import detached

        # Started with the process's background runner (playground/chat/apps.py starts it).
        detached.register_service("batch-tracker", tracker.run_forever)
