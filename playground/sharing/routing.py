from django.urls import re_path

from playground.sharing.consumers import ShareConsumer
from playground.sharing.models import TOKEN_PATTERN

websocket_urlpatterns = [
    re_path(rf"^ws/s/(?P<token>{TOKEN_PATTERN})/$", ShareConsumer.as_asgi()),
]
