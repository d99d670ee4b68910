from django.apps import AppConfig


class LocalapiConfig(AppConfig):
    name = "playground.localapi"

    def ready(self):
        from playground.localapi.engines import batches

        # Every server process runs pending batches (each batch is claimed by exactly one).
        batches.register()
        batches.start_runner()
