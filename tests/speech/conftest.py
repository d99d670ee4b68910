import httpx
import pytest
from django.core.management import call_command

from playground.connections.models import Connection


@pytest.fixture
def catalog(db):
    call_command("seed_catalog", verbosity=0)


@pytest.fixture
def alice_http(live_server, client, alice):
    """An httpx client logged in as alice on the live server, with the CSRF header set."""
    client.force_login(alice)
    with httpx.Client(base_url=live_server.url, cookies={"sessionid": client.cookies["sessionid"].value},
                      timeout=60) as http:
        http.get("/speech/")
        http.headers["X-CSRFToken"] = http.cookies["csrftoken"]
        yield http


@pytest.fixture
def local_connection(alice):
    return Connection.objects.get(owner=alice, is_local=True)
