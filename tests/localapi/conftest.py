import httpx
import pytest


@pytest.fixture
def api(live_server):
    """An httpx client of the live server's local API, sending the test key."""
    with httpx.Client(
        base_url=live_server.api_url, headers={"Authorization": f"Bearer {live_server.api_key}"}, timeout=30
    ) as client:
        yield client
