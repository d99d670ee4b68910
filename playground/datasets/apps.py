from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class DatasetsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "playground.datasets"

    def ready(self):
        # Each app that can add a row to a dataset declares its sources in its own dataset_rows.py (sources.py).
        autodiscover_modules("dataset_rows")
