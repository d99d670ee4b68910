"""PLAYGROUND_LOG_FORMAT=json: one JSON line per request and per generation, with trace ids, and no user words."""

import json

import pytest
from django.urls import reverse

from playground.chat.models import Message
from tests.faults.conftest import local_conversation, logged_in
from tests.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def test_json_logs_have_a_line_per_request_and_per_generation(alice, servers, tmp_path):
    server = servers(PLAYGROUND_LOG_FORMAT="json")
    conversation = local_conversation(alice)
    with logged_in(alice, server) as http:
        response = http.post(reverse("chat:send", args=[conversation.pk]), data={"content": "okapi-marble hello"})
        assert response.status_code == 200
    answer = Message.objects.get(conversation=conversation, role="assistant")
    wait_for(lambda: Message.objects.get(pk=answer.pk).status != Message.STREAMING, timeout=60, what="the answer")
    answer.refresh_from_db()

    def lines() -> list[dict]:
        text = (tmp_path / f"daphne-{server.port}.log").read_text()
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]

    generation = wait_for(
        lambda: [r for r in lines() if r.get("event") == "generation"], timeout=10, what="the generation's line"
    )[0]
    assert generation["kind"] == "chat" and generation["id"] == answer.pk
    assert generation["status"] == "complete" and generation["model"] == "local/chat"
    assert generation["trace_id"] == answer.trace_id != ""
    assert generation["duration_ms"] > 0 and generation["first_token_ms"] > 0
    requests = [r for r in lines() if r.get("event") == "request"]
    send = next(r for r in requests if r["view"] == "chat:send")
    assert send["status"] == 200 and send["method"] == "POST" and send["route"] == "c/<int:pk>/send/"
    upstream = next(r for r in requests if r["view"].startswith("localapi") and "completions" in r["route"])
    assert upstream["trace_id"] == answer.trace_id
    assert all({"time", "level", "logger", "message"} <= set(r) for r in lines())
    assert "okapi" not in (tmp_path / f"daphne-{server.port}.log").read_text()
