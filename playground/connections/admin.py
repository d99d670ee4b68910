from django.contrib import admin

from playground.connections.models import Connection


@admin.register(Connection)
class ConnectionAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "base_url", "is_local", "key_hint", "last_test_ok"]
    list_filter = ["is_local"]
    search_fields = ["name", "owner__username", "base_url"]
    # The encrypted key never appears in admin.
    exclude = ["encrypted_key"]
    readonly_fields = ["key_hint", "last_tested", "last_test_ok", "last_test_message"]
