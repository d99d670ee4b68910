from django.conf import settings
from django.contrib import admin
from django.urls import include, path

from playground import health
from playground.lib import metrics
from playground.prompts import api as prompts_api

urlpatterns = [
    path("health/live", health.live, name="health-live"),
    path("health/ready", health.ready, name="health-ready"),
    path("metrics", metrics.endpoint, name="metrics"),
    path("admin/", admin.site.urls),
    path("accounts/", include("playground.accounts.urls")),
    path("sso/", include("playground.sso.urls")),
    path("operators/", include("playground.operators.urls")),
    path("connections/", include("playground.connections.urls")),
    path("teams/", include("playground.teams.urls")),
    path("catalog/", include("playground.catalog.urls")),
    path("rerank/", include("playground.rerank.urls")),
    path("speech/", include("playground.speech.urls")),
    path("batches/", include("playground.batches.urls")),
    path("evaluate/", include("playground.evaluate.urls")),
    path("prompts/", include("playground.prompts.urls")),
    path("datasets/", include("playground.datasets.urls")),
    path("api/prompts/<str:name>", prompts_api.prompt_request, name="prompts-api"),
    path("", include("playground.sharing.urls")),
    path("", include("playground.chat.urls")),
]

if settings.LOCAL_API:
    urlpatterns.insert(-1, path("local/v1/", include("playground.localapi.urls")))

# Pages in the site's layout, in words, with a way back (JSON for JSON clients); a 503 when the database is down.
handler400 = "playground.lib.errors.bad_request"
handler403 = "playground.lib.errors.permission_denied"
handler404 = "playground.lib.errors.page_not_found"
handler500 = "playground.lib.errors.server_error"
