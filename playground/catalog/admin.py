from django.contrib import admin

from playground.catalog.models import CatalogModel


@admin.register(CatalogModel)
class CatalogModelAdmin(admin.ModelAdmin):
    list_display = ["model_id", "kind", "scope", "connection", "enabled", "context_window"]
    list_filter = ["kind", "scope", "enabled"]
    search_fields = ["model_id", "label"]
