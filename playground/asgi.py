import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "playground.settings")
# Django must be set up before the consumers (and their models) are imported.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from playground.connections import keycheck  # noqa: E402
from playground.lib import drain  # noqa: E402
from playground.lib.metrics import count_websockets, install_exit_hook  # noqa: E402
from playground.lib.static_files import StaticFiles  # noqa: E402
from playground.origin import SameOriginValidator  # noqa: E402
from playground.routing import websocket_urlpatterns  # noqa: E402
from playground.upstream import network  # noqa: E402
from playground.upstream.client import install_shutdown_hook  # noqa: E402

# Refuse to start when the encryption keys cannot read the stored secrets (the error says what to do).
if os.environ.get("PLAYGROUND_BOOT_CHECKS", "on") != "off":
    keycheck.verify()

# drain.watch: requests in flight and open sockets, which a SIGTERM lets finish, then closes (lib/drain.py).
application = drain.watch(
    ProtocolTypeRouter(
        {
            "http": StaticFiles(django_asgi_app),  # scripts and styles without a hop to Django's sync thread
            "websocket": count_websockets(SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))),
        }
    )
)
drain.install()
install_shutdown_hook()
install_exit_hook()
network.tls()  # the upstream client's TLS context, built now rather than in the first send
# Background work (generations, clips, batches) starts from the apps' ready(): see playground/lib/detached.py.
