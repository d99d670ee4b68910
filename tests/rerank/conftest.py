import httpx
import pytest
from django.core.management import call_command
from django.test import Client


@pytest.fixture
def catalog(db):
    call_command("seed_catalog", verbosity=0)


@pytest.fixture
def http_for(live_server):
    """httpx clients logged in on the live server (the views call the upstream with async_to_sync, which a
    browser test's event loop in this thread would forbid in-process)."""
    opened = []

    def make(user) -> httpx.Client:
        client = Client()
        client.force_login(user)
        http = httpx.Client(
            base_url=live_server.url, cookies={"sessionid": client.cookies["sessionid"].value}, timeout=60
        )
        http.get("/rerank/")
        http.headers["X-CSRFToken"] = http.cookies["csrftoken"]
        opened.append(http)
        return http

    yield make
    for http in opened:
        http.close()


@pytest.fixture
def alice_http(http_for, alice):
    return http_for(alice)
