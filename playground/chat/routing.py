from django.urls import path, re_path

from playground.chat.consumers import ChatConsumer
from playground.chat.sharing.consumer import ShareConsumer
from playground.sharing.models import TOKEN_PATTERN

websocket_urlpatterns = [
    path("ws/chat/<int:pk>/", ChatConsumer.as_asgi()),
    # A live share link's viewers: read-only, under the link's token.
    re_path(rf"^ws/s/(?P<token>{TOKEN_PATTERN})/$", ShareConsumer.as_asgi()),
]
