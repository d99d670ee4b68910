import pytest

from playground.catalog.models import CatalogModel
from playground.catalog.params import CHAT_PARAMS, RERANK_PARAMS, SPEECH_PARAMS, params_for, params_form
from playground.connections.models import Connection

pytestmark = pytest.mark.django_db


def names(model, params):
    return [param.name for param in params_for(model, params)]


def local(model_id):
    return CatalogModel.objects.get(connection=None, scope="local", model_id=model_id)


def test_the_panel_shows_only_what_the_model_supports():
    plain = names(local("local/chat"), CHAT_PARAMS)
    assert "temperature" in plain and "top_p" in plain
    assert not {"thinking_budget", "reasoning_effort", "min_p", "enable_thinking"} & set(plain)
    reasoner = names(local("local/reasoner"), CHAT_PARAMS)
    assert {"enable_thinking", "thinking_budget"} <= set(reasoner)
    assert "reasoning_effort" in names(local("local/reasoner-effort"), CHAT_PARAMS)
    assert "min_p" in names(local("local/minp"), CHAT_PARAMS)


def test_rerank_parameters_follow_capabilities():
    assert "instruction" in names(local("local/reranker-instruct"), RERANK_PARAMS)
    assert "instruction" not in names(local("local/reranker"), RERANK_PARAMS)
    lite = names(local("local/reranker-lite"), RERANK_PARAMS)
    assert "max_chunks_per_doc" not in lite and "overlap_tokens" not in lite


def test_a_new_model_needs_no_code():
    model = CatalogModel.objects.create(scope="hosted", model_id="acme/new-thinker", thinking_budget=True)
    assert "thinking_budget" in names(model, CHAT_PARAMS)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("thinking_budget", "64", "thinking_budget: must be at least 128."),
        ("thinking_budget", "40000", "thinking_budget: must be at most 32768."),
        ("top_p", "1.5", "top_p: must be at most 1."),
        ("stop", "a\nb\nc\nd\ne", "stop: at most 4 stop sequences are allowed (got 5)."),
        ("temperature", "hot", "temperature: enter a valid value."),
    ],
)
def test_validation_names_the_field_and_the_limit(field, value, message):
    form = params_form(local("local/reasoner"), CHAT_PARAMS, data={field: value})
    assert not form.is_valid()
    assert message in form.errors[field]


def test_min_p_bounds():
    form = params_form(local("local/minp"), CHAT_PARAMS, data={"min_p": "1.01"})
    assert form.errors["min_p"] == ["min_p: must be at most 1."]


def test_request_values_leave_unset_fields_to_the_provider():
    data = {"temperature": "0.3", "stop": "END\n", "stream": "on", "response_format": "json_object"}
    form = params_form(local("local/chat"), CHAT_PARAMS, data=data)
    assert form.is_valid(), form.errors
    assert form.request_values() == {
        "stream": True,
        "temperature": 0.3,
        "stop": ["END"],
        "response_format": {"type": "json_object"},
    }


def test_speech_parameters_have_the_spec_bounds():
    form = params_form(local("local/tts"), SPEECH_PARAMS, data={"speed": "5", "gain": "-11"})
    assert not form.is_valid()
    assert form.errors["speed"] == ["speed: must be at most 4."]
    assert form.errors["gain"] == ["gain: must be at least -10."]


@pytest.mark.needs_local_api
def test_only_the_local_connection_sees_seeded_models(alice):
    local_connection = Connection.objects.get(owner=alice, is_local=True)
    ids = set(CatalogModel.objects.for_connection(local_connection).values_list("model_id", flat=True))
    assert "local/chat" in ids and "Qwen/Qwen3-8B" not in ids
    hosted = Connection.objects.create(owner=alice, name="Hosted", base_url="https://api.example.com/v1")
    assert not CatalogModel.objects.for_connection(hosted).exists()


@pytest.mark.needs_local_api
def test_refreshed_entries_replace_the_seeded_ones_for_that_connection(alice):
    connection = Connection.objects.get(owner=alice, is_local=True)
    CatalogModel.objects.create(connection=connection, scope="connection", model_id="local/chat", max_output=123)
    chat = CatalogModel.objects.for_connection(connection).get(model_id="local/chat")
    assert chat.connection == connection and chat.max_output == 123


def test_the_seeded_local_models_match_what_the_local_api_declares():
    from playground.catalog.services import flags_from_capabilities
    from playground.localapi.registry import MODELS

    seeded = {entry.model_id: entry for entry in CatalogModel.objects.filter(connection=None, scope="local")}
    assert set(seeded) == set(MODELS)
    for model in MODELS.values():
        entry = seeded[model.id]
        assert entry.kind == model.kind
        for flag, value in flags_from_capabilities(model.capabilities).items():
            assert getattr(entry, flag) == value, (model.id, flag)
