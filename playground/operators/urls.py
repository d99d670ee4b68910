from django.urls import path

from playground.operators import views

app_name = "operators"

urlpatterns = [
    path("users/", views.users, name="users"),
    path("users/<int:pk>/deactivate/", views.deactivate, name="deactivate"),
    path("users/<int:pk>/reactivate/", views.reactivate, name="reactivate"),
]
