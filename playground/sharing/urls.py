from django.urls import path, re_path

from playground.sharing import kinds, views
from playground.sharing.models import TOKEN_PATTERN

app_name = "sharing"

# Each kind's own routes first (its export, import, ...), in this namespace.
urlpatterns = [route for kind in kinds.all_kinds() for route in kind.urls()]
urlpatterns += [
    path("shared/", views.index, name="index"),
    path("shared/<str:kind>/<int:pk>/", views.source, name="source"),
    path("code/<str:kind>/<int:pk>/", views.code, name="code"),
    path("shared/links/<int:pk>/update/", views.update, name="update"),
    path("shared/links/<int:pk>/edit/", views.edit, name="edit"),
    path("shared/links/<int:pk>/revoke/", views.revoke, name="revoke"),
    re_path(rf"^s/(?P<token>{TOKEN_PATTERN})/?$", views.view, name="view"),
    re_path(rf"^s/(?P<token>{TOKEN_PATTERN})/files/(?P<key>[a-z0-9-]{{1,64}})$", views.shared_file, name="file"),
    re_path(rf"^s/(?P<token>{TOKEN_PATTERN})/fork/$", views.fork, name="fork"),
]
