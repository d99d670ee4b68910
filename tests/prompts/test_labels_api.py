"""Labels move in one click, show in the history and in a team's audit log, and a protected one only admins move;
code fetches a compiled request by label or version with a hashed pgp_ token; another's prompt is a 404."""

import json

import pytest
from django.urls import reverse

from playground.prompts.models import ApiToken, digest
from playground.teams.models import AuditEvent
from tests.conftest import client_of
from tests.prompts.conftest import make_prompt

pytestmark = pytest.mark.django_db


def _move(client, prompt, label, number):
    return client.post(reverse("prompts:label", args=[prompt.pk]), {"label": label, "version": str(number)})


def test_a_label_moves_in_one_click_and_shows_in_the_history_and_the_audit_log(alice_client, alice, team):
    prompt = make_prompt(alice, "team-prompt", team=team, versions=3)
    _move(alice_client, prompt, "production", 2)
    _move(alice_client, prompt, "production", 3)
    label = prompt.labels.get(name="production")
    assert label.version.number == 3
    assert [(m.from_number, m.to_number) for m in label.moves.order_by("pk")] == [(None, 2), (2, 3)]
    page = alice_client.get(reverse("prompts:detail", args=[prompt.pk])).content.decode()
    assert 'id="v3"' in page and "production: v2 → v3 by alice" in page
    details = list(AuditEvent.objects.filter(team=team, action="prompt.label").values_list("detail", flat=True))
    assert "team-prompt: “production” moved from v2 to v3" in details


def test_a_protected_label_only_admins_move(alice, bob, team):
    alice_client, bob_client = client_of(alice), client_of(bob)
    prompt = make_prompt(alice, "guarded", team=team, versions=2)
    _move(alice_client, prompt, "production", 1)
    alice_client.post(reverse("prompts:protect", args=[prompt.pk]), {"label": "production", "protected": "on"})
    _move(bob_client, prompt, "production", 2)  # bob is a member, not an admin
    assert prompt.labels.get(name="production").version.number == 1
    _move(bob_client, prompt, "staging", 2)  # an unprotected label: members move it
    assert prompt.labels.get(name="staging").version.number == 2
    bob_client.post(reverse("prompts:protect", args=[prompt.pk]), {"label": "production"})
    assert prompt.labels.get(name="production").protected
    _move(alice_client, prompt, "production", 2)
    assert prompt.labels.get(name="production").version.number == 2


def test_a_bad_label_name_moves_nothing(alice_client, alice):
    prompt = make_prompt(alice)
    response = _move(alice_client, prompt, "Not A Label!", 1)
    assert response.status_code == 302 and not prompt.labels.exists()


@pytest.fixture
def token(alice):
    return ApiToken.mint(alice, "ci")[1]


def _api(client, name, token, query="", **kwargs):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.get(f"/api/prompts/{name}{query}", headers=headers, **kwargs)


def test_tokens_are_hashed_at_rest_and_shown_once(alice_client, alice):
    response = alice_client.post(reverse("prompts:tokens"), {"name": "laptop"})
    page = response.content.decode()
    row = ApiToken.objects.get(owner=alice)
    token = page.split('<pre class="mono token">')[1].split("</pre>")[0]
    assert (
        token.startswith("pgp_")
        and row.hashed == digest(token)
        and token not in json.dumps(list(ApiToken.objects.values()), default=str)
    )
    assert token not in alice_client.get(reverse("prompts:tokens")).content.decode()
    alice_client.post(reverse("prompts:revoke-token", args=[row.pk]))
    assert not ApiToken.objects.exists()


def test_the_api_returns_the_compiled_request_by_label_or_version(client, alice, token):
    prompt = make_prompt(alice, "summary", versions=2, params={"temperature": 0.2, "top_k": 5})
    client.force_login(alice)
    _move(client, prompt, "production", 1)
    client.logout()
    response = _api(client, "summary", token, "?label=production&topic=cats&n=5")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["ref"] == "summary@v1" and body["labels"] == ["production"]
    assert body["request"]["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Summarise cats in 5 words."},
    ]
    assert body["request"]["model"] == "local/chat"
    assert body["request"]["temperature"] == 0.2 and body["request"]["top_k"] == 5
    response = client.generic(
        "GET",
        "/api/prompts/summary?version=2",
        json.dumps({"variables": {"topic": "dogs", "n": 3}}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.json()["request"]["messages"][1]["content"] == "Summarise dogs in 3 words."


@pytest.mark.parametrize(
    ("query", "status", "words"),
    [
        ("?label=nope&topic=a&n=1", 404, "label: “nope” does not exist on summary"),
        ("?version=9&topic=a&n=1", 404, "summary has no v9"),
        ("?topic=a", 400, "variables: n has no value"),
        ("?topic=a&n=1&extra=2", 400, "variables.extra: the template has no {{extra}}"),
    ],
)
def test_the_api_says_what_is_wrong(client, alice, token, query, status, words):
    make_prompt(alice, "summary")
    response = _api(client, "summary", token, query)
    assert response.status_code == status
    assert words in response.json()["error"]["message"]


def test_the_api_needs_a_token_and_hides_other_users_prompts(client, alice, bob, token, team):
    make_prompt(bob, "bobs")
    make_prompt(bob, "teams", team=team)
    assert _api(client, "bobs", None).status_code == 401
    assert _api(client, "bobs", "pgp_wrong").status_code == 401
    assert _api(client, "bobs", token, "?topic=a&n=1").status_code == 404
    assert _api(client, "teams", token, "?topic=a&n=1").status_code == 200  # alice is in the team
    team.memberships.filter(user=alice).delete()
    assert _api(client, "teams", token, "?topic=a&n=1").status_code == 404
