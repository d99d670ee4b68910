from django.urls import path

from playground.speech import views

app_name = "speech"

urlpatterns = [
    path("", views.index, name="index"),
    path("voices/", views.index, name="voices"),
]
