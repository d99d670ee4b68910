from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "playground.catalog"

    def ready(self):
        from playground.catalog.services import refresh_on_add
        from playground.connections.signals import connection_added

        connection_added.connect(refresh_on_add, dispatch_uid="catalog-refresh-on-add")
