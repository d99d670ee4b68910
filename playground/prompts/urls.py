from django.urls import path

from playground.prompts import improve, token_views, views

app_name = "prompts"

urlpatterns = [
    path("", views.index, name="index"),
    path("new/", views.new, name="new"),
    path("import/", views.import_view, name="import"),
    path("fields/", views.fields, name="fields"),
    path("tokens/", token_views.tokens, name="tokens"),
    path("tokens/<int:tid>/revoke/", token_views.revoke, name="revoke-token"),
    path("<int:pk>/", views.detail, name="detail"),
    path("<int:pk>/edit/", views.edit, name="edit"),
    path("<int:pk>/compare/", views.compare, name="compare"),
    path("<int:pk>/label/", views.label, name="label"),
    path("<int:pk>/protect/", views.protect, name="protect"),
    path("<int:pk>/delete/", views.delete, name="delete"),
    path("<int:pk>/export/", views.export, name="export"),
    path("<int:pk>/improve/", improve.improve, name="improve"),
    path("<int:pk>/improve/accept/", improve.accept, name="improve-accept"),
    path("<int:pk>/v<int:number>/", views.version, name="version"),
    path("<int:pk>/v<int:number>/restore/", views.restore, name="restore"),
]
