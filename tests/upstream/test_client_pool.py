"""The upstream client keeps its connections: a streamed answer read to its [DONE] gives its connection back to
the pool, so the next request is written at once instead of connecting (and, to a provider over TLS, shaking
hands) again."""

import httpcore
import pytest

from playground.upstream import client
from tests.fakeprovider.server import CHAT_MODEL

pytestmark = pytest.mark.django_db(transaction=True)


class Counting(httpcore.AsyncNetworkBackend):
    """A network backend that counts the connections opened through it."""

    def __init__(self, inner):
        self.inner, self.opened = inner, 0

    async def connect_tcp(self, *args, **kwargs):
        self.opened += 1
        return await self.inner.connect_tcp(*args, **kwargs)

    async def sleep(self, seconds):
        await self.inner.sleep(seconds)


def counted(trusted: bool) -> Counting:
    pool = client.get_client(trusted)._transport._pool
    pool._network_backend = Counting(pool._network_backend)
    return pool._network_backend


async def answer(endpoint: client.Endpoint, model: str, words: int) -> str:
    body = {"model": model, "messages": [{"role": "user", "content": f"write {words} words about rivers"}]}
    text = []
    async with client.chat_stream(endpoint, body) as stream:
        async for chunk in stream:
            for choice in chunk.get("choices") or []:
                text.append(choice["delta"].get("content") or "")
    assert stream.done
    return "".join(text)


async def three_answers_one_connection(endpoint: client.Endpoint, model: str) -> None:
    await client.close_clients()
    backend = counted(endpoint.trusted)
    try:
        for words in (5, 40, 5):
            assert await answer(endpoint, model, words)
        assert backend.opened == 1
    finally:
        await client.close_clients()


@pytest.mark.needs_local_api
@pytest.mark.parametrize("trusted", [True, False], ids=["local", "checked-address"])
async def test_the_local_apis_answers_one_after_another_share_one_connection(live_server, trusted):
    endpoint = client.Endpoint(base_url=live_server.api_url, api_key=live_server.api_key, trusted=trusted)
    await three_answers_one_connection(endpoint, "local/chat")


async def test_an_openai_style_providers_answers_share_one_connection(fake_openai, settings):
    settings.ALLOWED_UPSTREAM_HOSTS = ["127.0.0.1"]
    endpoint = client.Endpoint(base_url=fake_openai.base_url, api_key=fake_openai.key, trusted=False)
    await three_answers_one_connection(endpoint, CHAT_MODEL)
