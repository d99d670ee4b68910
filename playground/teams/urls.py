from django.urls import path

from playground.teams import library, reports, views

app_name = "teams"

urlpatterns = [
    path("", views.index, name="index"),
    path("join/<str:token>/", views.join, name="join"),
    path("<int:pk>/", views.detail, name="detail"),
    path("<int:pk>/delete/", views.delete, name="delete"),
    path("<int:pk>/leave/", views.leave, name="leave"),
    path("<int:pk>/transfer/", views.transfer, name="transfer"),
    path("<int:pk>/invites/", views.invite, name="invite"),
    path("<int:pk>/invites/<int:iid>/revoke/", views.revoke_invite, name="revoke_invite"),
    path("<int:pk>/members/<int:mid>/remove/", views.remove_member, name="remove_member"),
    path("<int:pk>/members/<int:mid>/role/", views.set_role, name="set_role"),
    path("<int:pk>/members/<int:mid>/budget/", views.set_budget, name="set_budget"),
    path("<int:pk>/budget/", views.set_team_budget, name="set_team_budget"),
    path("<int:pk>/connections/new/", views.add_connection, name="add_connection"),
    path("<int:pk>/connections/local/", views.add_local_connection, name="add_local_connection"),
    path("<int:pk>/connections/<int:cid>/", views.edit_connection, name="edit_connection"),
    path("<int:pk>/connections/<int:cid>/revoke/", views.revoke_connection, name="revoke_connection"),
    path("<int:pk>/connections/<int:cid>/delete/", views.delete_connection, name="delete_connection"),
    path("<int:pk>/usage/", reports.usage, name="usage"),
    path("<int:pk>/usage.csv", reports.usage_csv, name="usage_csv"),
    path("<int:pk>/audit/", reports.audit_log, name="audit"),
    path("move/<str:kind>/<int:pk>/", library.move_view, name="move"),
]
