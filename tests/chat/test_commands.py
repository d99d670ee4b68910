"""One command per operation (chat/commands.py): the form POST and the socket frame of a send run the same
command, so the same fields make the same rows and the same upstream body; the posted parameters are parsed once
and reach the body typed (they are not read back from the stored JSON)."""

import pytest
from django.http import QueryDict
from django.urls import reverse

from playground.chat import actions, commands, outcomes
from playground.chat.models import Message

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]  # conversations on the Local connection

FIELDS = "content=hello&temperature=0.3&max_tokens=50&stream=on"


class Started:
    """What a launcher returns in place of a generation: records the call, does nothing upstream."""

    replaces = None

    def __init__(self, calls, endpoint, body, limits):
        calls.append(body)
        self.limits = limits

    def bind_threadsafe(self, message):
        pass

    def abort_threadsafe(self):
        if self.limits is not None and self.limits.ticket is not None:
            self.limits.ticket.release()


def launcher(calls):
    return lambda endpoint, body, limits=None: Started(calls, endpoint, body, limits)


def rows(conversation):
    return list(conversation.messages.order_by("pk").values_list("role", "content", "status", "model_id", "params"))


def test_a_send_by_form_and_by_socket_makes_the_same_rows_and_the_same_body(alice, make_conversation):
    by_form, by_socket = make_conversation(), make_conversation()
    form_calls, socket_calls = [], []

    posted = commands.prepare_send(alice, by_form.pk, QueryDict(FIELDS), [], launcher(form_calls))
    ctx = actions.Context(alice, by_socket.pk, None)
    frame = actions.form_fields({"action": "send", "id": "s1", **QueryDict(FIELDS).dict()})
    framed = actions._prepare_send(ctx, frame, launcher(socket_calls))

    assert posted.kind == framed.kind == outcomes.SENT
    assert form_calls == socket_calls and len(form_calls) == 1
    assert form_calls[0]["temperature"] == 0.3 and form_calls[0]["max_tokens"] == 50
    assert rows(by_form) == rows(by_socket) and [r[0] for r in rows(by_form)] == ["user", "assistant"]
    for turn in posted.turns + framed.turns:
        turn.limits.ticket.release()


def test_posted_parameters_reach_the_body_without_being_validated_again(alice, make_conversation, monkeypatch):
    conversation = make_conversation()

    def again(*args, **kwargs):
        raise AssertionError("the stored parameters were validated again")

    monkeypatch.setattr("playground.chat.services.request.chat_params_form", again)
    calls = []
    outcome = commands.prepare_send(alice, conversation.pk, QueryDict(FIELDS), [], launcher(calls))
    assert outcome.sent and calls[0]["temperature"] == 0.3
    conversation.refresh_from_db()
    assert conversation.params["temperature"] == 0.3
    outcome.turns[0].limits.ticket.release()


def test_an_invalid_send_is_refused_by_either_door_with_the_same_words_and_nothing_saved(alice, make_conversation):
    conversation = make_conversation()
    fields = QueryDict("content=hello&temperature=7")
    posted = commands.prepare_send(alice, conversation.pk, fields, [], launcher([]))
    framed = actions._prepare_send(actions.Context(alice, conversation.pk, None), fields, launcher([]))
    assert posted.kind == framed.kind == outcomes.INVALID
    assert posted.errors == framed.errors and any(e.startswith("temperature") for e in posted.errors)
    assert not Message.objects.filter(conversation=conversation).exists()


@pytest.mark.parametrize("name", ["chat:stop", "chat:retry"])
@pytest.mark.parametrize("pk", [2**63, 10**30])
def test_an_id_the_database_cannot_hold_names_no_message(client, alice, name, pk):
    """The address's ids go through the same check as a field's (inputs.object_id): 404, not a database error."""
    client.force_login(alice)
    response = client.post(reverse(name, args=[pk, 1]))
    assert response.status_code == 404
    assert client.post(reverse(name, args=[1, pk])).status_code == 404
