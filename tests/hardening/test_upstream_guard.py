"""The address guard: embedded IPv4 forms, the allow-list, DNS pinning, and redirects as errors."""

import asyncio

import pytest

from playground.lib import guard
from playground.upstream import client
from playground.upstream.client import Endpoint
from playground.upstream.errors import UpstreamError


@pytest.mark.parametrize(
    "address",
    [
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "2002:a00:1::1",  # 6to4 of 10.0.0.1
        "64:ff9b::127.0.0.1",  # NAT64 of 127.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
        "64:ff9b:1::7f00:1",  # local-use NAT64
        "::ffff:127.0.0.1",  # IPv4-mapped
        "::ffff:192.168.0.1",
        "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo whose client is 127.0.0.1
    ],
)
def test_ipv6_forms_of_private_ipv4_are_refused(address):
    assert guard.is_public(address) is False


def test_ipv6_forms_of_a_public_ipv4_stay_public():
    assert guard.is_public("64:ff9b::8.8.8.8") is True
    assert guard.is_public("2002:808:808::1") is True


async def test_6to4_loopback_is_refused_at_call_time(settings):
    settings.ALLOWED_UPSTREAM_HOSTS = []
    for base in ("http://[2002:7f00:1::]:9/v1", "http://[64:ff9b::127.0.0.1]:9/v1"):
        with pytest.raises(UpstreamError) as caught:
            await client.models(Endpoint(base_url=base, api_key="k"))
        assert caught.value.kind == "blocked"


async def test_an_allow_listed_name_still_may_not_resolve_to_a_private_address(settings, monkeypatch):
    settings.ALLOWED_UPSTREAM_HOSTS = ["api.example.test"]

    async def resolve(host, port):
        return ["127.0.0.1"]

    monkeypatch.setattr(guard, "getaddrinfo", resolve)
    guard._resolved.clear()
    with pytest.raises(UpstreamError) as caught:
        await client.models(Endpoint(base_url="http://api.example.test:9/v1", api_key="k"))
    assert caught.value.kind == "blocked" and "private" in caught.value.message


class Listener:
    """A tiny HTTP server on 127.0.0.1 that records the requests it gets and answers 200 {}."""

    def __init__(self):
        self.requests: list[bytes] = []

    async def __aenter__(self):
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc):
        self.server.close()
        await self.server.wait_closed()

    async def handle(self, reader, writer):
        head = await reader.readuntil(b"\r\n\r\n")
        self.requests.append(head)
        body = b'{"object": "list", "data": []}'
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()
        writer.close()


async def test_dns_rebinding_cannot_reach_loopback(settings, monkeypatch):
    """The check sees a public address, the connection would see 127.0.0.1: nothing reaches 127.0.0.1."""
    settings.ALLOWED_UPSTREAM_HOSTS = []
    answers = iter([["93.184.216.34"], ["127.0.0.1"], ["127.0.0.1"]])

    async def rebinding(host, port):
        return next(answers)

    monkeypatch.setattr(guard, "getaddrinfo", rebinding)
    guard._resolved.clear()
    async with Listener() as listener:
        with pytest.raises(UpstreamError) as caught:
            await client.models(Endpoint(base_url=f"http://rebind.example.test:{listener.port}/v1", api_key="k"))
        await client.close_clients()
    assert caught.value.kind == "blocked"
    assert listener.requests == []


async def test_the_connection_goes_to_the_checked_address_with_the_original_host(settings, monkeypatch):
    settings.ALLOWED_UPSTREAM_HOSTS = ["pinned.example.test", "127.0.0.1"]
    lookups = []

    async def resolve(host, port):
        lookups.append(host)
        return ["127.0.0.1"]

    monkeypatch.setattr(guard, "getaddrinfo", resolve)
    guard._resolved.clear()
    async with Listener() as listener:
        result = await client.models(Endpoint(base_url=f"http://pinned.example.test:{listener.port}/v1", api_key="k"))
        await client.close_clients()
    assert result.status == 200
    assert f"host: pinned.example.test:{listener.port}".encode() in listener.requests[0].lower()
    assert lookups == ["pinned.example.test", "pinned.example.test"]


async def test_a_redirect_is_an_error_in_words(settings, monkeypatch):
    settings.ALLOWED_UPSTREAM_HOSTS = ["127.0.0.1"]

    async def handle(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 301 Moved\r\nlocation: https://elsewhere.example/v1/models\r\ncontent-length: 0\r\n\r\n"
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(UpstreamError) as caught:
            await client.models(Endpoint(base_url=f"http://127.0.0.1:{port}/v1", api_key="k"))
        await client.close_clients()
    finally:
        server.close()
    error = caught.value
    assert error.status == 301
    assert "redirected to https://elsewhere.example/v1/models" in error.message
    assert "base URL" in error.next_step
