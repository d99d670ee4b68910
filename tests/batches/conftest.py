import time

import httpx
import pytest
from django.core.management import call_command

from playground.connections.models import Connection
from tests.conftest import LOCAL_API_TEST_KEY

HTMX = {"HX-Request": "true"}


@pytest.fixture
def catalog(transactional_db):
    call_command("seed_catalog", verbosity=0)


def web_session(live_server, client, user) -> httpx.Client:
    """An HTTP client of the live server logged in as `user`, carrying the CSRF token like htmx does."""
    client.force_login(user)
    http = httpx.Client(base_url=live_server.url, timeout=60, cookies={"sessionid": client.cookies["sessionid"].value})
    http.get("/batches/").raise_for_status()
    http.headers["X-CSRFToken"] = http.cookies["csrftoken"]
    return http


@pytest.fixture
def alice_http(live_server, client, alice, catalog):
    http = web_session(live_server, client, alice)
    yield http
    http.close()


def local_connection(user) -> Connection:
    return Connection.objects.get(owner=user, is_local=True)


def wait_for_status(http: httpx.Client, pk: int, statuses: tuple[str, ...], timeout: float = 60) -> str:
    """Poll the refresh view as the page does; return the last row HTML."""
    deadline = time.monotonic() + timeout
    while True:
        html = http.get(f"/batches/{pk}/refresh/", headers=HTMX).text
        if any(f'data-status="{status}"' in html for status in statuses):
            return html
        if time.monotonic() > deadline:
            raise AssertionError(f"batch {pk} never reached {statuses}: {html}")
        time.sleep(0.3)


def add_connection(user, *, name: str, base_url: str, key: str = LOCAL_API_TEST_KEY) -> Connection:
    connection = Connection(owner=user, name=name, base_url=base_url)
    connection.set_key(key)
    connection.save()
    return connection
