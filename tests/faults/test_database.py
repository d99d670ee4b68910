"""The database unreachable under a live daphne: words and a 503, never a bare 500, and nothing saved."""

import httpx
import pytest
from django.urls import reverse

from playground.chat.models import Message
from tests.faults.conftest import CSRF, local_conversation, logged_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def test_with_the_database_unreachable_a_send_gets_words_not_a_bare_500(alice, servers):
    conversation = local_conversation(alice)
    # A server whose database does not answer (nothing listens on port 1).
    down = servers(DATABASE_URL="postgres://postgres@127.0.0.1:1/nothing", PLAYGROUND_DB_POOL="0")
    with logged_in(alice, down) as session:
        cookies = dict(session.cookies)
    with httpx.Client(base_url=down.url, cookies=cookies, headers={"X-CSRFToken": CSRF}) as http:
        url = reverse("chat:send", args=[conversation.pk])
        response = http.post(url, data={"content": "hello"}, headers={"Accept": "application/json"})
        assert response.status_code == 503
        assert response.json()["error"]["type"] == "database_unavailable"
        page = http.get(reverse("chat:conversation", args=[conversation.pk]))
        assert page.status_code == 503 and "database cannot be reached" in page.text
    assert not Message.objects.exists()
