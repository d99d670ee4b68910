from django.apps import AppConfig


class LocalapiConfig(AppConfig):
    name = "playground.localapi"

    def ready(self):
        from playground.localapi import metrics
        from playground.localapi.engines import batch_runner

        # /metrics shows the queue of local batches (docs/operations.md, "Metrics").
        metrics.register()

        # Every server process runs pending batches (each batch is claimed by exactly one).
        batch_runner.register()
        batch_runner.start_runner()
