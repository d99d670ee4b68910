from django.urls import path

from playground.catalog import views

app_name = "catalog"

urlpatterns = [
    path("picker/", views.picker, name="picker"),
    path("<int:connection_pk>/", views.index, name="index"),
    path("<int:connection_pk>/refresh/", views.refresh, name="refresh"),
    path("<int:connection_pk>/add/", views.add, name="add"),
    path("<int:connection_pk>/models/<int:pk>/", views.edit, name="edit"),
]
