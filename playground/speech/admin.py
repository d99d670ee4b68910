from django.contrib import admin

from playground.speech.models import SpeechClip


@admin.register(SpeechClip)
class SpeechClipAdmin(admin.ModelAdmin):
    list_display = ["id", "owner", "model", "voice", "response_format", "status", "bytes", "created"]
    list_filter = ["status", "response_format", "model"]
    search_fields = ["text", "trace_id", "owner__username"]
    raw_id_fields = ["owner", "connection"]
