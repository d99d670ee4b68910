"""A budget holds under concurrency: many parallel sends at a budget that allows one request, through two server
processes (PostgreSQL + Redis) or threads of one (SQLite), let at most one request reach the provider, and the
team's usage equals the provider's own figures."""

import asyncio
import os
import threading

import httpx
import pytest
from django.db import close_old_connections
from django.urls import reverse

from playground.chat.models import Conversation, Message
from playground.connections import gate, ledger
from playground.connections.models import Lease
from playground.teams.models import Membership, UsageRecord
from tests.conftest import free_port, start_server, stop_server
from tests.fakeprovider import server as fake
from tests.teams.conftest import make_team_connection
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)
TWO_PROCESSES = pytest.mark.skipif(
    not os.environ.get("REDIS_URL") or "postgres" not in os.environ.get("DATABASE_URL", ""),
    reason="needs DATABASE_URL on PostgreSQL and REDIS_URL: two server processes share them",
)
CSRF = "abcdefghijklmnopqrstuvwxyz012345"


@pytest.fixture
def second_server(live_server, tmp_path):
    port = free_port()
    process = start_server(port, tmp_path / "second.log")
    yield f"http://127.0.0.1:{port}"
    stop_server(process)


def chats(team, alice, bob, fake_openai, count: int):
    connection = make_team_connection(team, alice, base_url=fake_openai.base_url, key=fake_openai.key)
    Membership.objects.filter(team=team, user=bob).update(monthly_token_budget=1)
    return [
        Conversation.objects.create(owner=bob, connection=connection, model_id=fake.CHAT_MODEL) for _ in range(count)
    ]


async def fire(servers: list[str], cookie: str, conversations) -> list[int]:
    headers = {"Cookie": cookie, "X-CSRFToken": CSRF, "HX-Request": "true"}
    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=200)) as http:
        posts = [
            http.post(
                servers[i % len(servers)] + reverse("chat:send", args=[c.pk]),
                data={"content": "Name a river."},
                headers={**headers, "Referer": servers[i % len(servers)]},
            )
            for i, c in enumerate(conversations)
        ]
        return [r.status_code for r in await asyncio.gather(*posts)]


def wait_until_nothing_streams(deadline=60.0):
    def settled():
        return not (Message.objects.filter(status=Message.STREAMING).exists() or Lease.objects.exists())

    wait_for(settled, timeout=deadline, what="every generation and lease to end")


@TWO_PROCESSES
@pytest.mark.parametrize("count", [20, 100])
def test_parallel_sends_through_two_processes_spend_a_one_request_budget_once(
    count, live_server, second_server, client, team, alice, bob, fake_openai
):
    conversations = chats(team, alice, bob, fake_openai, count)
    client.force_login(bob)
    cookie = f"sessionid={client.cookies['sessionid'].value}; csrftoken={CSRF}"
    statuses = asyncio.run(fire([live_server.url, second_server], cookie, conversations))
    assert all(status == 200 for status in statuses), statuses
    wait_until_nothing_streams()
    sent = fake_openai.state.bodies("/chat/completions")
    answers = list(Message.objects.filter(role="assistant", conversation__in=conversations))
    print(f"\n{count} parallel sends, 2 processes: {len(sent)} reached the provider; {len(answers)} answers")
    assert len(sent) == len(answers) == 1
    # The ledger (what the usage page sums) holds the provider's own usage of that one answer.
    row = UsageRecord.objects.get(team=team, user=bob)
    usage = answers[0].usage
    assert (row.prompt_tokens, row.completion_tokens) == (usage["prompt_tokens"], usage["completion_tokens"]) != (0, 0)
    client.force_login(alice)
    page = client.get(reverse("teams:usage", args=[team.pk])).content.decode()
    assert f"{usage['prompt_tokens'] + usage['completion_tokens']:,}" in page


def test_parallel_opens_in_threads_reserve_a_one_token_budget_once(team, alice, bob, fake_openai):
    """The same rule on whatever database runs the suite (SQLite serialises the writes): 20 threads open the gate
    at once; one gets a pass, the others are refused in words."""
    connection = make_team_connection(team, alice, base_url=fake_openai.base_url, key=fake_openai.key)
    Membership.objects.filter(team=team, user=bob).update(monthly_token_budget=1)
    outcomes, start = [], threading.Barrier(20)

    def one():
        start.wait()
        try:
            outcomes.append(gate.open(connection, bob.pk, "chat", tokens=10))
        except gate.Refused as refusal:
            outcomes.append(refusal)
        except Exception as exc:  # "database is locked" would be a failure of the rule, shown here
            outcomes.append(exc)
        finally:
            close_old_connections()

    threads = [threading.Thread(target=one) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    passes = [o for o in outcomes if isinstance(o, gate.Pass)]
    refusals = [o for o in outcomes if isinstance(o, gate.Refused)]
    assert len(passes) == 1 and len(refusals) == 19, outcomes
    assert "(10 of 1 tokens this month by bob, requests in flight included)" in refusals[0].message
    passes[0].settle(usage={"prompt_tokens": 3, "completion_tokens": 4})
    assert not Lease.objects.exists()
    assert ledger.tokens_this_month(team.pk, bob.pk) == 7
