from django.urls import path

from playground.rerank import views

app_name = "rerank"

urlpatterns = [
    path("", views.index, name="index"),
    path("fields/", views.fields, name="fields"),
    path("run/", views.run, name="run"),
    path("runs/<int:pk>/", views.detail, name="detail"),
    path("runs/<int:pk>/delete/", views.delete, name="delete"),
    path("runs/<int:pk>/compare/", views.compare, name="compare"),
    path("runs/<int:pk>/compare/<int:other_pk>/", views.comparison, name="comparison"),
]
