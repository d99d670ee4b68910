"""The defects of issue 22, each reproduced: import, imported parameters, malformed fields, NUL, gone links.

Every bad input is refused in words naming the field (never a 500, never stored); pages render whatever is stored,
an invalid stored value shown as invalid in words.
"""

import html
import json
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from playground.chat.models import Conversation, Message
from playground.connections.models import Connection
from playground.evaluate.models import TestCase
from playground.sharing.freeze import freeze
from playground.sharing.models import Share
from playground.teams.models import OWNER, Invite, Membership, Team
from tests.conftest import client_of
from tests.evaluate.conftest import make_evaluation

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]

DEEP = "[" * 100_000 + "]" * 100_000


def page(response) -> str:
    return html.unescape(response.content.decode())


def local(user) -> Connection:
    return Connection.objects.get(owner=user, is_local=True)


def conversation_of(user, **fields) -> Conversation:
    return Conversation.objects.create(owner=user, connection=local(user), model_id="local/chat", **fields)


# ---------------------------------------------------------------- 1. import of deeply nested JSON


@pytest.mark.parametrize("as_file", [False, True])
def test_a_deeply_nested_import_is_refused_in_words(alice_client, alice, catalog, as_file):
    data = {"file": SimpleUploadedFile("deep.json", DEEP.encode())} if as_file else {"text": DEEP}
    response = alice_client.post(reverse("sharing:import"), data)
    assert response.status_code == 200
    assert "body: JSON nested deeper than the limit of 64 levels." in page(response)
    assert not Conversation.objects.filter(owner=alice).exists()


# ---------------------------------------------------------------- 2. imported parameters


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"stop": [1, 2]}, "params.stop: expected a list of up to 4 texts (got [1, 2])."),
        ({"temperature": "hot"}, "params.temperature: expected a number (got &quot;hot&quot;)."),
        ({"temperature": 7}, "params.temperature: must be at most 2."),
        ({"n": True}, "params.n: expected a number (got true)."),
        ({"response_format": "yaml"}, "params.response_format: choose one of text, json_object."),
        ({"warp": 9}, "params.warp: not a parameter of the chat panel."),
        ({"tools": [{"type": "nope"}]}, 'params.tools[0]: must be {"type": "function", "function": {...}}.'),
    ],
)
def test_imported_parameters_the_panel_would_refuse_are_refused_naming_the_field(
    alice_client, alice, catalog, params, error
):
    text = json.dumps({"messages": [{"role": "user", "content": "hi"}], "params": params})
    response = alice_client.post(reverse("sharing:import"), {"text": text})
    assert response.status_code == 200
    assert html.unescape(error) in page(response)
    assert not Conversation.objects.filter(owner=alice).exists()


@pytest.mark.parametrize("calls", [["x"], [{"id": "c1", "function": {"name": 5}}], [{"id": {}, "function": {}}]])
def test_imported_tool_calls_of_the_wrong_shape_are_refused_naming_the_field(alice_client, alice, catalog, calls):
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": calls}]
    response = alice_client.post(reverse("sharing:import"), {"text": json.dumps(messages)})
    assert "messages[1].tool_calls[0]: expected" in page(response)
    assert not Conversation.objects.filter(owner=alice).exists()


def test_imported_parameters_the_panel_accepts_are_kept(alice_client, alice, catalog):
    params = {"stop": ["END"], "temperature": 0.2, "max_tokens": None, "response_format": "json_object"}
    text = json.dumps({"messages": [{"role": "user", "content": "hi"}], "params": params})
    response = alice_client.post(reverse("sharing:import"), {"text": text})
    assert response.status_code == 302
    imported = Conversation.objects.get(owner=alice)
    assert imported.params == params


def test_pages_render_stored_parameters_that_are_not_valid_as_invalid_in_words(alice, bob, catalog):
    conversation = conversation_of(alice, params={"stop": [1, 2], "temperature": "hot"})
    Message.objects.create(conversation=conversation, role="user", content="hi")
    alice_client = client_of(alice)
    for url in (
        reverse("chat:conversation", args=[conversation.pk]),
        reverse("chat:panel", args=[conversation.pk]),
        reverse("sharing:code", args=["conversation", conversation.pk]),
    ):
        response = alice_client.get(url)
        assert response.status_code == 200, url
        assert "stop: expected a list of up to 4 texts (got [1, 2])." in page(response), url
    preview = alice_client.get(reverse("chat:request_preview", args=[conversation.pk]))
    assert preview.status_code == 200 and "stop" not in preview.json()

    # Shared, then forked by another user: the fork's pages render too.
    share = Share(owner=alice, title="t", source=conversation)
    share.save()
    freeze(share)
    bob_client = client_of(bob)
    assert bob_client.get(reverse("sharing:view", args=[share.token])).status_code == 200
    forked = bob_client.post(reverse("sharing:fork", args=[share.token]), {"connection": local(bob).pk})
    assert forked.status_code == 302
    fork = Conversation.objects.get(owner=bob)
    response = bob_client.get(reverse("chat:conversation", args=[fork.pk]))
    assert response.status_code == 200 and "temperature: expected a number" in page(response)


# ---------------------------------------------------------------- 3. malformed fields


def test_a_next_that_is_not_a_path_of_this_site_falls_back(alice_client, alice, catalog):
    conversation = conversation_of(alice)
    for target in ("abc", "https://evil.example/", "//evil.example/x", "javascript:alert(1)"):
        share = Share(owner=alice, title="t", source=conversation)
        share.save()
        freeze(share)
        response = alice_client.post(reverse("sharing:update", args=[share.pk]), {"next": target})
        assert response.status_code == 302 and response["Location"] == reverse("sharing:index"), target
        response = alice_client.post(reverse("sharing:revoke", args=[share.pk]), {"next": target})
        assert response.status_code == 302 and response["Location"] == reverse("sharing:index"), target
    share = Share(owner=alice, title="t", source=conversation)
    share.save()
    freeze(share)
    back = reverse("chat:conversation", args=[conversation.pk])
    response = alice_client.post(reverse("sharing:revoke", args=[share.pk]), {"next": back})
    assert response["Location"] == back


@pytest.mark.parametrize("value", ["abc", "1.5", "-1", "٣", "99999999999999999999999", "1\x00"])
def test_non_integer_ids_in_fields_are_a_404(alice_client, alice, catalog, value):
    conversation = conversation_of(alice)
    Team.objects.create(name="Research")
    move = alice_client.post(reverse("teams:move", args=["conversation", conversation.pk]), {"team": value})
    copy = alice_client.post(reverse("chat:copy_tools", args=[conversation.pk]), {"source": value})
    # Found by the fuzz suite: ids in a query.
    picker = alice_client.get(reverse("catalog:picker"), {"connection": value})
    reuse = alice_client.get(reverse("speech:index"), {"reuse": value})
    panel = alice_client.get(reverse("chat:panel", args=[conversation.pk]), {"connection": value})
    statuses = {move.status_code, copy.status_code, picker.status_code, reuse.status_code, panel.status_code}
    assert statuses <= {400, 404}, statuses


# ---------------------------------------------------------------- 4. NUL characters


def test_nul_in_insert_edit_and_compare_is_refused_naming_the_field(alice_client, alice, catalog):
    conversation = conversation_of(alice)
    question = Message.objects.create(conversation=conversation, role="user", content="hi")
    htmx = {"HX-Request": "true"}
    posts = [
        (reverse("chat:insert", args=[conversation.pk]), {"role": "user", "content": "a\x00b"}),
        (reverse("chat:edit", args=[conversation.pk, question.pk]), {"content": "a\x00b"}),
        (
            reverse("chat:compare", args=[conversation.pk]),
            {"content": "a\x00b", "model_1": "local/chat", "model_2": "local/chat"},
        ),
        (reverse("chat:rename", args=[conversation.pk]), {"title": "a\x00b"}),
    ]
    for url, data in posts:
        response = alice_client.post(url, data, headers=htmx)
        assert response.status_code == 400, url
        field = "Title" if "rename" in url else "Message"  # as the page names the field, not its POST name
        assert response.content.decode().startswith(f"{field}: NUL characters (\\u0000) are not allowed."), url
    assert list(conversation.messages.values_list("content", flat=True)) == ["hi"]


def test_nul_in_a_websocket_action_is_refused_by_the_service_too():
    from playground.chat.services.branches import Refused, content_of

    with pytest.raises(Refused, match=r"content: NUL characters \(\\u0000\) are not allowed"):
        content_of({"content": "a\x00b"})


@pytest.mark.parametrize(
    "where",
    [
        '{"title": "a\\u0000b", "messages": [{"role": "user", "content": "hi"}]}',
        '{"messages": [{"role": "user", "content": "a\\u0000b"}]}',
        '{"messages": [{"role": "user", "content": [{"type": "text", "text": "a\\u0000b"}]}]}',
    ],
)
def test_nul_in_an_import_is_refused_naming_the_field(alice_client, alice, catalog, where):
    response = alice_client.post(reverse("sharing:import"), {"text": where})
    assert response.status_code == 200 and "NUL characters (\\u0000) are not allowed." in page(response)
    assert not Conversation.objects.filter(owner=alice).exists()


def test_nul_in_evaluation_cases_is_refused(alice_client, alice, catalog):
    evaluation = make_evaluation(alice, rows=1)
    case = evaluation.cases.get()
    typed = alice_client.post(reverse("evaluate:cases", args=[evaluation.pk]), {f"case-{case.pk}-question": "a\x00"})
    assert typed.status_code == 400 and f"case-{case.pk}-question: NUL characters" in page(typed)
    for name, data in (("rows.csv", b"question,expected\na\x00b,c\n"), ("rows.jsonl", b'{"question": "a\\u0000"}\n')):
        upload = SimpleUploadedFile(name, data)
        response = alice_client.post(reverse("evaluate:import", args=[evaluation.pk]), {"file": upload})
        assert response.status_code == 200 and "NUL characters (\\u0000) are not allowed." in page(response)
    assert list(TestCase.objects.filter(evaluation=evaluation).values_list("values", flat=True)) == [{"question": "q1"}]


def test_a_deeply_nested_evaluation_case_line_is_refused(alice_client, alice, catalog):
    evaluation = make_evaluation(alice, rows=1)
    response = alice_client.post(reverse("evaluate:import", args=[evaluation.pk]), {"text": '{"a": ' + DEEP + "}"})
    assert response.status_code == 200 and "row 1: body: JSON nested deeper than the limit of 2 levels." in page(
        response
    )


# ---------------------------------------------------------------- 6. gone links


def test_an_expired_share_link_is_a_410_page_saying_it_expired(client, alice, catalog):
    share = Share(owner=alice, title="t", source=conversation_of(alice))
    share.expires = timezone.now() - timedelta(minutes=1)
    share.save()
    freeze(share)
    response = client.get(reverse("sharing:view", args=[share.token]))
    assert response.status_code == 410
    text = page(response)
    assert "This share link expired" in text and 'class="topbar"' in text and "Sign in" in text


def test_a_revoked_share_link_is_a_404_page_saying_revoked_or_not_found(client, alice, catalog):
    share = Share(owner=alice, title="t", source=conversation_of(alice))
    share.save()
    token = share.token
    share.delete()
    for url in (reverse("sharing:view", args=[token]), reverse("sharing:fork", args=[token])):
        response = client_of(alice).get(url)
        assert response.status_code == 404
        text = page(response)
        assert "was revoked by its owner, or it never existed" in text and "Back to the playground" in text


def test_gone_invites_say_so_in_the_sites_layout(alice, bob, catalog):
    team = Team.objects.create(name="Research")
    Membership.objects.create(team=team, user=alice, role=OWNER)
    later = timezone.now() + timedelta(days=1)
    used = Invite.objects.create(team=team, expires=later, max_uses=1, uses=1)
    expired = Invite.objects.create(team=team, expires=timezone.now() - timedelta(minutes=1))
    revoked = Invite.objects.create(team=team, expires=later, revoked=True)
    bob_client = client_of(bob)
    for invite, status, words in (
        (used, 410, "This invite link was already used"),
        (expired, 410, "This invite link has expired"),
        (revoked, 404, "This invite link was revoked, or it never existed"),
    ):
        response = bob_client.get(reverse("teams:join", args=[invite.token]))
        assert response.status_code == status and words in page(response), invite.state
        assert 'class="topbar"' in page(response)
    unknown = bob_client.get(reverse("teams:join", args=["x" * 32]))
    assert unknown.status_code == 404 and "revoked, or it never existed" in page(unknown)
