from django.contrib import admin

from playground.rerank.models import RerankRun


@admin.register(RerankRun)
class RerankRunAdmin(admin.ModelAdmin):
    list_display = ["id", "owner", "model", "query", "trace_id", "created"]
    list_filter = ["model"]
    search_fields = ["query", "trace_id", "owner__username"]
    raw_id_fields = ["owner", "connection", "compared_to"]
