from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("playground.accounts.urls")),
    path("connections/", include("playground.connections.urls")),
    path("catalog/", include("playground.catalog.urls")),
    path("local/v1/", include("playground.localapi.urls")),
    path("rerank/", include("playground.rerank.urls")),
    path("speech/", include("playground.speech.urls")),
    path("batches/", include("playground.batches.urls")),
    path("", include("playground.chat.urls")),
]
