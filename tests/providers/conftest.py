"""The same flows against two providers: the embedded local API and the independent OpenAI-style fake.

`provider` is parametrized: each flow test runs once per provider, with alice's connection to it and the ids of
its chat, tools, rerank and speech models.
"""

from dataclasses import dataclass

import pytest
from asgiref.sync import async_to_sync

from playground.catalog.services import refresh_models
from playground.connections.models import Connection
from tests.fakeprovider import server as fake
from tests.fakeprovider.server import FakeProvider


@dataclass
class Provider:
    name: str
    connection: Connection
    chat_model: str
    tools_model: str
    rerank_model: str
    speech_model: str
    fake: FakeProvider | None = None

    @property
    def voice(self) -> str:
        return f"{self.speech_model}:alex"

    def rate_limited(self, text: str) -> str:
        """The text of a chat message whose request the provider refuses with a 429 (requests per minute)."""
        if self.fake is not None:
            self.fake.state.fail = 429
            return text
        return f"{text} [fault:429-rpm]"


def fake_connection(user, fake_openai: FakeProvider, *, key: str | None = None) -> Connection:
    connection = Connection(owner=user, name="Fake OpenAI", base_url=fake_openai.base_url)
    connection.set_key(key or fake_openai.key)
    connection.save()
    return connection


def local_provider(user) -> Provider:
    connection = Connection.objects.get(owner=user, is_local=True)
    return Provider("local", connection, "local/chat", "local/tools", "local/reranker", "local/tts")


def fake_provider(user, fake_openai: FakeProvider) -> Provider:
    connection = fake_connection(user, fake_openai)
    message, ok = async_to_sync(refresh_models)(connection)
    assert ok, message
    return Provider(
        "fake",
        connection,
        fake.CHAT_MODEL,
        fake.TOOLS_MODEL,
        fake.RERANK_MODEL,
        fake.SPEECH_MODEL,
        fake=fake_openai,
    )


@pytest.fixture(params=[pytest.param("local", marks=pytest.mark.needs_local_api), "fake"])
def provider(request, live_server, catalog, alice, fake_openai) -> Provider:
    return local_provider(alice) if request.param == "local" else fake_provider(alice, fake_openai)
