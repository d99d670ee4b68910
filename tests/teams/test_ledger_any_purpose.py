"""A new provider-calling feature is filed in a team's ledger with nothing written outside its own code: the gate
files every pass it settles under the purpose it was opened for, and keeps no list of purposes to join."""

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from playground.connections import gate, ledger
from playground.teams.models import Membership, UsageRecord
from playground.upstream import client
from playground.upstream.errors import UpstreamError
from tests.fakeprovider import server as fake
from tests.teams.conftest import make_team_connection

pytestmark = pytest.mark.django_db(transaction=True)


async def summarise(connection, user, text: str) -> str:
    """The throwaway feature: a summary through the gate under a purpose no other code has heard of."""
    body = {"model": fake.CHAT_MODEL, "messages": [{"role": "user", "content": f"Summarise: {text}"}]}
    async with gate.opened(connection, user, "summaries", body=body) as ticket:
        result = await client.chat(ticket.endpoint, body)
        await ticket.asettle(usage=result.data.get("usage"), model=body["model"])
    return result.data["choices"][0]["message"]["content"]


@pytest.fixture
def connection(team, alice, fake_openai, settings):
    settings.ALLOWED_UPSTREAM_HOSTS = ["127.0.0.1"]
    return make_team_connection(team, alice, base_url=fake_openai.base_url, key=fake_openai.key)


async def test_a_new_features_requests_are_filed_under_its_purpose(connection, team, bob, fake_openai):
    await summarise(connection, bob, "The river runs to the sea.")
    (billed,) = fake_openai.state.billed
    row = await UsageRecord.objects.aget(team=team)
    assert (row.kind, row.username, row.model, row.status) == ("summaries", "bob", fake.CHAT_MODEL, "ok")
    assert (row.prompt_tokens, row.completion_tokens) == (billed["prompt_tokens"], billed["completion_tokens"])


async def test_the_budget_sees_a_new_features_tokens(connection, team, bob, fake_openai):
    await summarise(connection, bob, "The river runs to the sea.")
    spent = await sync_to_async(ledger.settled_tokens)(team.pk, bob.pk)
    assert spent == sum(item["prompt_tokens"] + item["completion_tokens"] for item in fake_openai.state.billed) > 0
    await Membership.objects.filter(team=team, user=bob).aupdate(monthly_token_budget=spent)
    fake_openai.state.requests.clear()
    with pytest.raises(gate.Refused) as refused:
        await summarise(connection, bob, "Again.")
    assert refused.value.reason == "budget" and fake_openai.state.requests == []


async def test_a_failure_and_a_long_purpose_are_filed_too(connection, team, bob, fake_openai):
    fake_openai.state.fail = 500
    with pytest.raises(UpstreamError):
        await summarise(connection, bob, "x")
    ticket = await gate.aopen(connection, bob, "a purpose longer than sixteen characters", tokens=1)
    await ticket.asettle(usage={"prompt_tokens": 3, "completion_tokens": 2})
    rows = [(row.kind, row.status, row.tokens) async for row in UsageRecord.objects.order_by("pk")]
    assert rows == [("summaries", "error", 0), ("a purpose longer", "ok", 5)]


async def test_the_teams_usage_report_shows_a_new_purpose_as_it_shows_chat(connection, team, alice, bob, async_client):
    """The report groups the ledger by what it holds: a new purpose needs no label or column written for it."""
    await summarise(connection, bob, "The river runs to the sea.")
    await async_client.aforce_login(alice)
    page = (await async_client.get(reverse("teams:usage", args=[team.pk]))).content.decode()
    assert "summaries" in page and fake.CHAT_MODEL in page
    csv_text = (await async_client.get(reverse("teams:usage_csv", args=[team.pk]))).content.decode()
    assert any(f",bob,summaries,{fake.CHAT_MODEL},ok,1," in line for line in csv_text.splitlines())


def test_the_ledger_lists_no_purposes():
    assert not hasattr(gate, "LEDGER_KINDS")
    assert not UsageRecord._meta.get_field("kind").choices
