from django.urls import path

from playground.evaluate import dataset_views, run_views, views

app_name = "evaluate"

urlpatterns = [
    path("", views.index, name="index"),
    path("new/", views.create, name="create"),
    path("<int:pk>/", views.detail, name="detail"),
    path("<int:pk>/delete/", views.delete, name="delete"),
    path("<int:pk>/prompt/", views.save_prompt, name="prompt"),
    path("<int:pk>/diff/", views.diff, name="diff"),
    path("<int:pk>/cases/", views.save_cases, name="cases"),
    path("<int:pk>/cases/import/", views.import_cases, name="import"),
    path("<int:pk>/cases/<int:case_pk>/delete/", views.delete_case, name="delete-case"),
    path("<int:pk>/variants/add/", views.add_variant, name="add-variant"),
    path("<int:pk>/variants/<int:variant_pk>/", views.save_variant, name="variant"),
    path("<int:pk>/variants/<int:variant_pk>/delete/", views.delete_variant, name="delete-variant"),
    path("<int:pk>/cells/<int:cell_pk>/rate/", run_views.rate, name="rate"),
    path("<int:pk>/runs/<int:number>/", run_views.run_page, name="run"),
    path("<int:pk>/compare/", run_views.compare, name="compare"),
    path("<int:pk>/compare/share/", run_views.share_comparison, name="share-compare"),
    path("<int:pk>/compare/export.<str:kind>", run_views.export_comparison, name="export-compare"),
    path("<int:pk>/batch/", views.submit_batch, name="batch"),
    path("<int:pk>/batch/status/", views.batch_status, name="batch-status"),
    path("<int:pk>/batch/cancel/", views.cancel_batch, name="batch-cancel"),
    path("<int:pk>/export.<str:kind>", views.export, name="export"),
    path("<int:pk>/dataset/", dataset_views.use_dataset, name="use-dataset"),
]
