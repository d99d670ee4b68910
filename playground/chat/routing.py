websocket_urlpatterns = []
