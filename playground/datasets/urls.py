from django.urls import path

from playground.datasets import add_views, views

app_name = "datasets"

urlpatterns = [
    path("", views.index, name="index"),
    path("new/", views.create, name="create"),
    path("import/", views.import_new, name="import"),
    path("add/", add_views.add, name="add"),
    path("<int:pk>/", views.detail, name="detail"),
    path("<int:pk>/save/", views.save, name="save"),
    path("<int:pk>/blank-row/", views.blank_row, name="blank-row"),
    path("<int:pk>/versions/", views.versions, name="versions"),
    path("<int:pk>/import/", views.import_version, name="import-version"),
    path("<int:pk>/delete/", views.delete, name="delete"),
    path("<int:pk>/v<int:number>/restore/", views.restore, name="restore"),
    path("<int:pk>/v<int:number>/export.<str:kind>", views.export, name="export"),
]
