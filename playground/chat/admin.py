from django.contrib import admin

from playground.chat.models import Conversation, Message


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    fields = ["role", "status", "content", "model_id", "finish_reason", "trace_id"]
    readonly_fields = ["trace_id"]
    show_change_link = True


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ["title", "owner", "model_id", "updated"]
    list_filter = ["context_policy"]
    search_fields = ["title", "owner__username"]
    raw_id_fields = ["owner", "connection"]
    inlines = [MessageInline]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["pk", "conversation", "role", "status", "model_id", "created"]
    list_filter = ["role", "status"]
    search_fields = ["content", "trace_id"]
    raw_id_fields = ["conversation"]
