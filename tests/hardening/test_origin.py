"""The websocket Origin must be this site: same scheme, host and port."""

import pytest
from channels.testing import WebsocketCommunicator

from playground.asgi import application
from playground.chat.models import Conversation
from playground.connections.models import Connection
from playground.origin import origin_allowed


@pytest.mark.parametrize(
    ("origin", "host", "secure", "allowed"),
    [
        ("http://127.0.0.1:8000", "127.0.0.1:8000", False, True),
        ("http://127.0.0.1", "127.0.0.1", False, True),
        ("http://127.0.0.1:80", "127.0.0.1", False, True),
        ("http://127.0.0.1:9999", "127.0.0.1:8000", False, False),
        ("https://127.0.0.1:8000", "127.0.0.1:8000", False, False),
        ("https://localhost", "localhost", True, True),
        ("http://localhost", "localhost", True, False),
        ("http://evil.example", "evil.example", False, False),  # not in ALLOWED_HOSTS
        ("null", "127.0.0.1", False, False),
        ("", "127.0.0.1", False, False),
    ],
)
def test_origin_must_match_scheme_host_and_port(origin, host, secure, allowed):
    assert origin_allowed(origin, host, secure) is allowed


def test_https_mode_expects_https_origins_behind_the_proxy(settings):
    settings.HTTPS = True
    assert origin_allowed("https://localhost", "localhost", False)
    assert not origin_allowed("http://localhost", "localhost", False)


def test_trusted_origins_are_accepted(settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://app.example.com"]
    assert origin_allowed("https://app.example.com", "localhost:8000", False)
    assert not origin_allowed("https://app.example.com:8443", "localhost:8000", False)


@pytest.mark.needs_local_api
@pytest.mark.django_db(transaction=True)
async def test_a_websocket_from_another_port_is_refused(alice):
    connection = await Connection.objects.aget(owner=alice, is_local=True)
    conversation = await Conversation.objects.acreate(owner=alice, connection=connection, model_id="local/chat")
    for origin, expected in ((b"http://127.0.0.1:9999", False), (b"http://127.0.0.1:8000", True)):
        communicator = WebsocketCommunicator(
            application,
            f"/ws/chat/{conversation.pk}/",
            headers=[(b"origin", origin), (b"host", b"127.0.0.1:8000")],
        )
        communicator.scope["user"] = alice
        connected, _ = await communicator.connect()
        assert connected is expected
        await communicator.disconnect()
