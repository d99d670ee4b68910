"""The upstream client keeps its connections: a streamed answer read to its [DONE] gives its connection back to
the pool, so the next request is written at once instead of connecting (and, to a provider over TLS, shaking
hands) again."""

import httpcore
import pytest

from playground.upstream import client

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


async def answer(endpoint: client.Endpoint, words: int) -> str:
    body = {"model": "local/chat", "messages": [{"role": "user", "content": f"write {words} words about rivers"}]}
    text = []
    async with client.chat_stream(endpoint, body) as stream:
        async for chunk in stream:
            for choice in chunk.get("choices") or []:
                text.append(choice["delta"].get("content") or "")
    assert stream.done
    return "".join(text)


@pytest.mark.parametrize("trusted", [True, False], ids=["local", "checked-address"])
async def test_streamed_answers_one_after_another_share_one_connection(live_server, trusted):
    await client.close_clients()
    backend = counted(trusted)
    endpoint = client.Endpoint(base_url=live_server.api_url, api_key=live_server.api_key, trusted=trusted)
    try:
        for words in (5, 40, 5):
            assert await answer(endpoint, words)
        assert backend.opened == 1
    finally:
        await client.close_clients()
