from django.urls import path

from playground.sso import views

app_name = "sso"

urlpatterns = [
    path("login/", views.start, name="login"),
    path("callback/", views.callback, name="callback"),
    path("logout/", views.logout, name="logout"),
]
