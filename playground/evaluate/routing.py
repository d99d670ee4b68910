from django.urls import path

from playground.evaluate.consumers import EvaluateConsumer

websocket_urlpatterns = [
    path("ws/evaluate/<int:pk>/", EvaluateConsumer.as_asgi()),
]
