from django.urls import path

from playground.connections import views

app_name = "connections"

urlpatterns = [
    path("", views.index, name="index"),
    path("new/", views.create, name="create"),
    path("<int:pk>/", views.edit, name="edit"),
    path("<int:pk>/delete/", views.delete, name="delete"),
    path("<int:pk>/test/", views.test, name="test"),
    path("<int:pk>/rotate-key/", views.rotate_key, name="rotate_key"),
]
