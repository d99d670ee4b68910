"""/metrics: off unless a token is set, then only with it; what it counts (requests, websockets, generations by
kind, upstream time to first token and errors by host, budget refusals, the local batch queue), summed over two
daphne processes, and never a user's words or a key."""

import asyncio
import re

import httpx
import pytest
import websockets
from django.test import override_settings
from django.urls import reverse
from prometheus_client import REGISTRY

from playground.chat.models import Message
from playground.connections import gate
from playground.connections.models import Connection
from playground.teams.models import Membership
from tests.faults.conftest import CSRF, local_conversation, logged_in
from tests.teams.conftest import make_team_connection, team  # noqa: F401
from tests.waiting import wait_for

TOKEN = "metrics-token-0123456789"


def test_metrics_are_off_without_a_token(client):
    assert client.get("/metrics").status_code == 404


@pytest.mark.django_db
@override_settings(METRICS_TOKEN=TOKEN)
def test_metrics_need_the_token(client):
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    assert "playground_http_requests_total" in response.text


def count(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0


@pytest.mark.django_db
def test_a_refused_budget_is_counted_by_kind(team, bob):  # noqa: F811
    connection = make_team_connection(team, team.memberships.get(role="owner").user)
    Membership.objects.filter(team=team, user=bob).update(monthly_token_budget=0)
    before = count("playground_budget_refusals_total", kind="rerank")
    with pytest.raises(gate.Refused) as refused:
        gate.open(connection, bob, "rerank", tokens=1)
    assert refused.value.reason == "budget"
    assert count("playground_budget_refusals_total", kind="rerank") == before + 1


@pytest.mark.django_db
@pytest.mark.needs_local_api
@override_settings(METRICS_TOKEN=TOKEN)
def test_the_local_batch_queue_is_read_when_scraped(client):
    from playground.localapi.engines.batches import create_batch, create_file

    line = b'{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"local/chat","messages":[]}}'
    file = create_file(owner="someone", filename="in.jsonl", purpose="batch", data=line + b"\n")
    create_batch(
        owner="someone",
        payload={"input_file_id": file.id, "endpoint": "/v1/chat/completions", "completion_window": "24h"},
    )
    text = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).text
    queued = sum(
        float(v) for v in re.findall(r'playground_local_batches\{status="(?:validating|in_queue)"\} (\S+)', text)
    )
    assert queued == 1


def scrape(server) -> str:
    response = httpx.get(f"{server.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
    assert response.status_code == 200
    return response.text


def value(text: str, name: str, **labels) -> float:
    """The value of one sample in an exposition text (0 when absent)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        series, _, number = line.rpartition(" ")
        sample, _, rest = series.partition("{")
        if sample == name and ",".join(sorted(rest.rstrip("}").split(","))) == wanted:
            return float(number)
    return 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.needs_local_api
def test_two_processes_report_the_sums_of_both_without_user_content(alice, servers, tmp_path):
    shared = {"PLAYGROUND_METRICS_TOKEN": TOKEN, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    first = servers(LOCAL_API_TOKEN_RATE="30", **shared)
    second = servers(**shared)
    conversation = local_conversation(alice)
    secret_words = "zebra-quartz-violet write 200 words"
    with logged_in(alice, first) as http:
        response = http.post(reverse("chat:send", args=[conversation.pk]), data={"content": secret_words})
        assert response.status_code == 200, response.text
        cookie = f"sessionid={http.cookies['sessionid']}; csrftoken={CSRF}"
    answer = Message.objects.get(conversation=conversation, role="assistant")

    # While it streams on the first process, the second reports it (and a websocket open on the second).
    async def with_socket_open() -> str:
        host = f"127.0.0.1:{second.port}"
        async with websockets.connect(
            f"ws://{host}/ws/chat/{conversation.pk}/", additional_headers={"Cookie": cookie, "Origin": f"http://{host}"}
        ):
            return await asyncio.to_thread(scrape, second)

    during = asyncio.run(with_socket_open())
    assert Message.objects.get(pk=answer.pk).status == Message.STREAMING
    assert value(during, "playground_active_generations", kind="chat") == 1
    assert value(during, "playground_websocket_connections") == 1

    wait_for(lambda: Message.objects.get(pk=answer.pk).status != Message.STREAMING, timeout=60, what="the answer")
    after = wait_for(
        lambda: (t := scrape(second)) and value(t, "playground_websocket_connections") == 0 and t, timeout=10, what="0"
    )
    assert value(after, "playground_active_generations", kind="chat") == 0
    assert value(after, "playground_websocket_connections_opened_total") == 1
    assert value(after, "playground_upstream_time_to_first_token_seconds_count", host="127.0.0.1", endpoint="chat") == 1
    sent = value(after, "playground_http_requests_total", view="chat:send", method="POST", status="200")
    assert sent == 1

    # A provider's refusal (a wrong key) is counted by host and status.
    wrong = Connection(owner=alice, name="Wrong", base_url=f"{second.url}/local/v1")
    wrong.set_key("sk-wrong-key-abcdef123456")
    wrong.save()
    with logged_in(alice, second) as http:
        http.post(reverse("connections:test", args=[wrong.pk]))
    text = scrape(first)
    assert value(text, "playground_upstream_errors_total", host="127.0.0.1", error="401") == 1
    assert "zebra" not in text and "sk-" not in text and "alice" not in text
