from django.contrib import admin

from playground.catalog.models import CatalogModel


@admin.register(CatalogModel)
class CatalogModelAdmin(admin.ModelAdmin):
    list_display = ["model_id", "kind", "scope", "connection", "enabled", "available", "context_window"]
    list_filter = ["kind", "scope", "enabled", "available"]
    search_fields = ["model_id", "label"]
