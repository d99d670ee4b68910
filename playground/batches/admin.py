from django.contrib import admin

from playground.batches.models import Batch


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    list_display = ["remote_id", "owner", "connection", "status", "request_count", "created"]
    list_filter = ["status"]
    search_fields = ["remote_id", "owner__username", "input_filename"]
    raw_id_fields = ["owner", "connection"]
    readonly_fields = ["created", "updated"]
