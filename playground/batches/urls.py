from django.urls import path

from playground.batches import views

app_name = "batches"

urlpatterns = [
    path("", views.index, name="index"),
]
