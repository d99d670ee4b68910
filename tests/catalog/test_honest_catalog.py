"""A connection's catalog is what its provider lists, with the facts we know of the ids we recognise."""

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse

from playground.catalog.models import CatalogModel
from playground.catalog.services import infer_kind, refresh_models
from playground.chat.models import Conversation
from playground.chat.services import selected_model
from playground.connections.models import Connection
from tests.catalog.tiny_provider import TinyProvider
from tests.factories import add_connection

pytestmark = pytest.mark.django_db


@pytest.fixture
def provider(settings):
    settings.ALLOWED_UPSTREAM_HOSTS = ["127.0.0.1"]
    with TinyProvider(["acme/chat", "acme/old-chat", "text-embedding-3-small", "black-forest-labs/FLUX.1-dev"]) as p:
        yield p


@pytest.fixture
def acme(alice, provider):
    connection = add_connection(alice, "Acme", key="sk-acme", url=provider.url)
    return connection


def picker(connection, kind="chat"):
    return list(CatalogModel.objects.for_connection(connection, kind=kind).values_list("model_id", flat=True))


def test_a_new_connection_to_another_provider_shows_no_seeded_models(alice_client, acme):
    assert picker(acme) == [] and picker(acme, "rerank") == []
    page = alice_client.get(reverse("catalog:index", args=[acme.pk])).content.decode()
    assert "Qwen/Qwen3-8B" not in page and "deepseek-ai" not in page
    assert "No models yet" in page


def test_a_refreshed_catalog_drops_the_models_the_provider_no_longer_lists(acme, provider):
    message, ok = async_to_sync(refresh_models)(acme)
    assert ok and message.startswith("4 models listed")
    assert picker(acme) == ["acme/chat", "acme/old-chat"]
    conversation = Conversation.objects.create(owner=acme.owner, connection=acme, model_id="acme/old-chat")

    provider.set_models("acme/chat")
    message, ok = async_to_sync(refresh_models)(acme)
    assert ok and "1 models listed" in message and "3 no longer listed are marked unavailable" in message
    assert picker(acme) == ["acme/chat"] and picker(acme, "embedding") == []
    old = CatalogModel.objects.get(connection=acme, model_id="acme/old-chat")
    assert old.available is False
    # Kept for the conversation that used it, hidden from pickers.
    assert selected_model(conversation) == old

    provider.set_models("acme/chat", "acme/old-chat")
    async_to_sync(refresh_models)(acme)
    assert picker(acme) == ["acme/chat", "acme/old-chat"]


def test_embedding_and_image_models_never_reach_the_chat_picker(alice_client, acme):
    async_to_sync(refresh_models)(acme)
    assert picker(acme, "embedding") == ["text-embedding-3-small"]
    assert picker(acme, "image") == ["black-forest-labs/FLUX.1-dev"]
    conversation = Conversation.objects.create(owner=acme.owner, connection=acme)
    page = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert 'value="acme/chat"' in page
    assert "text-embedding-3-small" not in page and "FLUX" not in page


def test_the_chat_default_is_a_model_the_connection_has(acme):
    async_to_sync(refresh_models)(acme)
    conversation = Conversation.objects.create(owner=acme.owner, connection=acme)
    assert selected_model(conversation).model_id == "acme/chat"


def test_known_ids_get_their_facts_and_unknown_ids_assume_nothing(acme, provider):
    provider.set_models("Qwen/Qwen3-8B", "acme/mystery", {"id": "acme/vec", "type": "embedding"})
    async_to_sync(refresh_models)(acme)
    qwen = CatalogModel.objects.get(connection=acme, model_id="Qwen/Qwen3-8B")
    assert qwen.thinking and qwen.top_k and qwen.tools
    mystery = CatalogModel.objects.get(connection=acme, model_id="acme/mystery")
    assert mystery.kind == "chat" and not (mystery.top_k or mystery.tools or mystery.vision or mystery.min_p)
    assert CatalogModel.objects.get(connection=acme, model_id="acme/vec").kind == "embedding"


@pytest.mark.parametrize(
    ("model_id", "kind"),
    [
        ("BAAI/bge-m3", "embedding"),
        ("BAAI/bge-reranker-v2-m3", "rerank"),
        ("openai/text-embedding-3-large", "embedding"),
        ("dall-e-3", "image"),
        ("Qwen/Qwen-Image", "image"),
        ("FunAudioLLM/CosyVoice2-0.5B", "speech"),
        ("tts-1", "speech"),
        ("Qwen/Qwen2.5-VL-72B-Instruct", "chat"),
        ("meta-llama/Llama-3.3-70B-Instruct", "chat"),
    ],
)
def test_kinds_are_inferred_conservatively_from_the_id(model_id, kind):
    assert infer_kind(model_id) == kind


def test_a_provider_without_a_model_list_gets_ids_added_by_hand(alice_client, acme, provider):
    provider.list_models = False
    message, ok = async_to_sync(refresh_models)(acme)
    assert not ok and "add the model ids you use by hand" in message and picker(acme) == []
    response = alice_client.post(reverse("catalog:add", args=[acme.pk]), {"model_id": "acme/chat", "kind": ""})
    assert response.status_code == 302
    assert picker(acme) == ["acme/chat"]
    # A refresh that fails keeps what was added by hand.
    async_to_sync(refresh_models)(acme)
    assert picker(acme) == ["acme/chat"]
    page = alice_client.post(reverse("catalog:add", args=[acme.pk]), {"model_id": "has space"}).content.decode()
    assert "model_id: an id has no spaces" in page


def test_an_override_is_kept_across_refreshes(alice_client, acme, provider):
    async_to_sync(refresh_models)(acme)
    model = CatalogModel.objects.get(connection=acme, model_id="acme/chat")
    data = {"kind": "chat", "vision": "on", "tools": "on", "context_window": "8192", "max_output": "1024"}
    response = alice_client.post(reverse("catalog:edit", args=[acme.pk, model.pk]), data)
    assert response.status_code == 302
    async_to_sync(refresh_models)(acme)
    model.refresh_from_db()
    assert model.vision and model.tools and model.context_window == 8192 and "vision" in model.edited


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("context_window", "0", "context_window: must be at least 1 token."),
        ("max_output", "-5", "max_output: must be at least 1 token."),
        ("max_output", "9000", "max_output: must be at most the context window (8192 tokens)."),
        ("context_window", "", "context_window: enter a number of tokens (at least 1)."),
    ],
)
def test_an_override_form_rejects_impossible_values_naming_the_field(alice_client, acme, field, value, message):
    async_to_sync(refresh_models)(acme)
    model = CatalogModel.objects.get(connection=acme, model_id="acme/chat")
    data = {"kind": "chat", "context_window": "8192", "max_output": "1024", field: value}
    response = alice_client.post(reverse("catalog:edit", args=[acme.pk, model.pk]), data, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and message in response.content.decode()
    model.refresh_from_db()
    assert model.context_window != 0 and model.edited == []


@pytest.mark.needs_local_api
def test_an_override_on_the_local_connection_stays_with_that_connection(alice_client, alice, bob):
    local = Connection.objects.get(owner=alice, is_local=True)
    seeded = CatalogModel.objects.get(connection=None, scope="local", model_id="local/chat")
    data = {"kind": "chat", "vision": "on", "context_window": "32768", "max_output": "8192"}
    alice_client.post(reverse("catalog:edit", args=[local.pk, seeded.pk]), data)
    seeded.refresh_from_db()
    assert not seeded.vision
    own = CatalogModel.objects.for_connection(local, kind="chat").get(model_id="local/chat")
    assert own.connection == local and own.vision
    bobs = Connection.objects.get(owner=bob, is_local=True)
    assert not CatalogModel.objects.for_connection(bobs, kind="chat").get(model_id="local/chat").vision


@pytest.mark.needs_local_api
def test_an_override_makes_the_attach_button_appear(alice_client, alice):
    local = Connection.objects.get(owner=alice, is_local=True)
    conversation = Conversation.objects.create(owner=alice, connection=local, model_id="local/chat")
    url = reverse("chat:conversation", args=[conversation.pk])
    assert 'id="attach-button" data-attach' in alice_client.get(url).content.decode()
    page = alice_client.get(url).content.decode()
    assert 'accept="" hidden' in page
    seeded = CatalogModel.objects.get(connection=None, scope="local", model_id="local/chat")
    data = {"kind": "chat", "vision": "on", "context_window": "32768", "max_output": "8192"}
    alice_client.post(reverse("catalog:edit", args=[local.pk, seeded.pk]), data)
    page = alice_client.get(url).content.decode()
    assert 'accept="image/png,image/jpeg,image/gif,image/webp"' in page
    button = page[page.index('id="attach-button"') :].split(">", 1)[0]
    assert " hidden" not in button


def test_another_users_connection_catalog_is_a_404(bob_client, acme):
    model = CatalogModel.objects.create(connection=acme, scope="connection", model_id="acme/chat")
    assert bob_client.get(reverse("catalog:index", args=[acme.pk])).status_code == 404
    assert bob_client.get(reverse("catalog:edit", args=[acme.pk, model.pk])).status_code == 404
    assert bob_client.post(reverse("catalog:add", args=[acme.pk]), {"model_id": "x"}).status_code == 404


def test_the_connection_form_takes_the_timeouts_and_names_the_field_and_limit(alice_client, acme):
    url = reverse("connections:edit", args=[acme.pk])
    data = {"name": "Acme", "base_url": acme.base_url, "include_usage": "on", "idle_timeout": "0"}
    page = alice_client.post(url, {**data, "first_token_timeout": "5000"}).content.decode()
    assert "first_token_timeout: must be at most 3600 seconds." in page
    assert "idle_timeout: must be at least 1 second." in page
    response = alice_client.post(url, {**data, "first_token_timeout": "30", "idle_timeout": ""})
    assert response.status_code == 302
    acme.refresh_from_db()
    assert (acme.first_token_timeout, acme.idle_timeout, acme.include_usage) == (30, 60, True)


@pytest.mark.needs_local_api
@pytest.mark.django_db(transaction=True)
def test_the_local_connection_refreshes_to_the_catalog_it_already_had(live_server, catalog, alice):
    local = Connection.objects.get(owner=alice, is_local=True)
    before = {m.model_id: (m.kind, m.capabilities()) for m in CatalogModel.objects.for_connection(local)}
    message, ok = async_to_sync(refresh_models)(local)
    assert ok and "no longer listed" not in message
    after = {m.model_id: (m.kind, m.capabilities()) for m in CatalogModel.objects.for_connection(local)}
    assert after == before
    assert not CatalogModel.objects.filter(connection=local, available=False).exists()
