from django.urls import path

from playground.speech import views

app_name = "speech"

urlpatterns = [
    path("", views.index, name="index"),
    path("fields/", views.fields, name="fields"),
    path("clips/", views.create, name="create"),
    path("clips/<int:pk>/", views.clip_detail, name="clip"),
    path("clips/<int:pk>/stream/", views.stream, name="stream"),
    path("clips/<int:pk>/status/", views.status, name="status"),
    path("clips/<int:pk>/download/", views.download, name="download"),
    path("clips/<int:pk>/download/<str:variant>/", views.download, name="download-variant"),
    path("clips/<int:pk>/delete/", views.delete, name="delete"),
    path("voices/", views.voices, name="voices"),
    path("voices/upload/", views.voice_upload, name="voice-upload"),
    path("voices/delete/", views.voice_delete, name="voice-delete"),
    path("voices/preview/", views.voice_preview, name="voice-preview"),
    path("voices/code/", views.voice_code, name="voice-code"),
]
