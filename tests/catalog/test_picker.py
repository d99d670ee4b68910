"""The one model picker: models filtered by kind and capability, only the user's own connections."""

import re

import pytest
from django.urls import reverse

from playground.catalog.forms import ModelPickerForm
from playground.catalog.services import add_by_hand
from playground.connections.models import Connection
from tests.factories import add_connection

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]


def ids(form) -> list[str]:
    return [model.model_id for model in form.models]


def options(html: str, name: str) -> list[str]:
    select = re.search(rf'<select name="{name}".*?</select>', html, re.S).group(0)
    return re.findall(r'<option value="([^"]*)"', select)


@pytest.fixture
def hosted(alice):
    connection = add_connection(alice, "Acme", url="https://api.acme.test/v1")
    add_by_hand(connection, "acme/chat-large", "chat")
    add_by_hand(connection, "acme/rerank", "rerank")
    return connection


def test_the_models_are_the_connections_of_one_kind(alice):
    local = Connection.objects.get(owner=alice, is_local=True)
    rerank = ModelPickerForm(user=alice, kind="rerank")
    assert rerank.chosen_connection == local
    assert ids(rerank) == ["local/reranker", "local/reranker-instruct", "local/reranker-lite"]
    assert rerank.chosen_model.model_id == "local/reranker"
    assert ids(ModelPickerForm(user=alice, kind="speech")) == ["local/tts"]


def test_a_capability_keeps_only_the_models_that_have_it(alice):
    vision = ids(ModelPickerForm(user=alice, kind="chat", capability="vision"))
    assert vision == ["local/ocr", "local/omni", "local/vision", "local/vision-b64"]
    assert ids(ModelPickerForm(user=alice, kind="chat", capability="pdf")) == ["local/ocr"]
    with pytest.raises(ValueError, match="capability"):
        ModelPickerForm(user=alice, kind="chat", capability="owner")


def test_the_chosen_connection_and_model_follow_the_choice(alice, hosted):
    form = ModelPickerForm({"connection": str(hosted.pk), "model": "acme/chat-large"}, user=alice, kind="chat")
    assert form.is_valid(), form.errors
    assert form.cleaned_data["connection"] == hosted and form.cleaned_data["model"] == "acme/chat-large"
    assert ids(form) == ["acme/chat-large"]


def test_a_model_of_another_kind_or_connection_is_refused(alice, hosted):
    form = ModelPickerForm({"connection": str(hosted.pk), "model": "local/chat"}, user=alice, kind="chat")
    assert not form.is_valid() and form.errors["model"] == ["model: choose a chat model of this connection."]
    typed = ModelPickerForm({"connection": str(hosted.pk), "model": "acme/rerank"}, user=alice, kind="chat", typed=True)
    assert not typed.is_valid() and "'acme/rerank' is not offered" in typed.errors["model"][0]


def test_another_users_connection_is_never_offered_and_is_refused_when_posted(alice, bob, hosted):
    mine = ModelPickerForm(user=bob, kind="chat")
    assert hosted not in mine.fields["connection"].queryset and mine.chosen_connection.owner == bob
    posted = ModelPickerForm({"connection": str(hosted.pk), "model": "acme/chat-large"}, user=bob, kind="chat")
    assert not posted.is_valid() and "connection" in posted.errors
    assert "acme/chat-large" not in ids(posted)


def test_the_picker_view_renders_the_filtered_picker(alice_client, alice, hosted):
    url = reverse("catalog:picker")
    page = alice_client.get(url, {"kind": "chat", "capability": "tools"}).content.decode()
    assert options(page, "model") == ["local/reasoner", "local/reasoner-effort", "local/tools"]
    assert f'hx-get="{url}?kind=chat&amp;capability=tools"' in page
    assert "{#" not in page and "fields_url" not in page  # the template's comment is not shown
    other = alice_client.get(url, {"kind": "rerank", "connection": hosted.pk}).content.decode()
    assert options(other, "model") == ["acme/rerank"]
    assert re.search(rf'<option value="{hosted.pk}"\s+selected', other)


def test_the_picker_view_with_no_listed_model_lets_a_model_id_be_typed(alice_client, hosted):
    page = alice_client.get(reverse("catalog:picker"), {"kind": "speech", "typed": "1", "connection": hosted.pk})
    assert '<input type="text" name="model"' in page.content.decode()


def test_the_picker_view_is_a_404_for_another_users_connection(bob_client, hosted):
    assert bob_client.get(reverse("catalog:picker"), {"kind": "chat", "connection": hosted.pk}).status_code == 404


@pytest.mark.parametrize("query", [{"kind": "poetry"}, {"kind": "chat", "capability": "owner"}])
def test_the_picker_view_refuses_an_unknown_kind_or_capability(alice_client, query):
    response = alice_client.get(reverse("catalog:picker"), query)
    assert response.status_code == 400 and next(iter(query.keys() - {"kind"}), "kind") in response.content.decode()


def test_the_picker_view_needs_a_login(client):
    assert client.get(reverse("catalog:picker")).status_code == 302
