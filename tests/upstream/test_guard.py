import pytest

from playground.lib.guard import is_public
from playground.upstream import client
from playground.upstream.client import Endpoint
from playground.upstream.errors import UpstreamError


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),
        ("::1", False),
        ("fd00::1", False),
        ("0.0.0.0", False),
    ],
)
def test_only_public_addresses_count_as_public(address, public):
    assert is_public(address) is public


async def test_the_client_refuses_internal_addresses_at_call_time(settings):
    settings.ALLOWED_UPSTREAM_HOSTS = []
    with pytest.raises(UpstreamError) as caught:
        await client.models(Endpoint(base_url="http://127.0.0.1:9/v1", api_key="k"))
    assert caught.value.kind == "blocked"


async def test_the_allow_list_overrides(settings):
    settings.ALLOWED_UPSTREAM_HOSTS = ["127.0.0.1"]
    with pytest.raises(UpstreamError) as caught:
        await client.models(Endpoint(base_url="http://127.0.0.1:9/v1", api_key="k"))
    assert caught.value.kind == "network"
