"""Websocket routes of every feature app, composed once for asgi.py."""

from playground.chat.routing import websocket_urlpatterns as chat_routes
from playground.evaluate.routing import websocket_urlpatterns as evaluate_routes

websocket_urlpatterns = [*chat_routes, *evaluate_routes]
