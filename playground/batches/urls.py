from django.urls import path

from playground.batches import from_prompt, views

app_name = "batches"

urlpatterns = [
    path("", views.index, name="index"),
    path("new/", views.create, name="create"),
    path("metadata-row/", views.metadata_row, name="metadata-row"),
    path("from-prompt/<int:vid>/", from_prompt.from_prompt, name="from-prompt"),
    path("<int:pk>/refresh/", views.refresh, name="refresh"),
    path("<int:pk>/cancel/", views.cancel, name="cancel"),
    path("<int:pk>/resubmit/", views.resubmit, name="resubmit"),
    path("<int:pk>/results/", views.results, name="results"),
    path("<int:pk>/download/<str:kind>/", views.download, name="download"),
]
