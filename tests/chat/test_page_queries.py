"""The chat page reads what it shows once: the connections, the catalog and the share links are not looked up
again by each part of the page that uses them (issue 36, cold load)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from playground.catalog.models import CatalogModel
from playground.chat import branches
from playground.chat.models import Message
from playground.sharing.models import Share

pytestmark = pytest.mark.needs_local_api  # conversations on the Local connection

# A conversation's page (the session and the user are read by the middleware of every page):
CONVERSATION_PAGE = [
    "django_session",  # the session
    "auth_user",  # its user
    "chat_conversation",  # the conversation (get_conversation: the user's or a 404)
    "connections_connection",  # the user's connections: the picker's list and the conversation's own connection
    "chat_message",  # the messages (the selected path is computed from them)
    "chat_attachment",  # the path's attachments (prefetched)
    "catalog_catalogmodel",  # the connection's chat models (the picker; the selected one among them)
    "prompts_promptversion",  # the library versions a compare column may run as
    "chat_conversation",  # the conversation list
    "sharing_share",  # the conversation's share links ("N watching" and the delete confirmation)
    "teams_team",  # the user's teams (the Share menu's "Move to team")
]
# The start page (no conversation yet): no panel of its own, the start picker and the list.
START_PAGE = [
    "django_session",
    "auth_user",
    "connections_connection",  # the user's connections (the picker)
    "chat_conversation",  # the last used connection and model (a new chat starts with them)
    "catalog_catalogmodel",  # the picked connection's chat models
    "chat_conversation",  # the conversation list
]


def tables_read(client, url) -> list[str]:
    client.get(url)  # the once-per-process work (the first sweep, the compare fields' cache)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return [query["sql"].split(" FROM ", 1)[1].split()[0].strip('"') for query in queries.captured_queries]


def add_turns(conversation, turns: int) -> None:
    rows = []
    for index in range(turns):
        rows.append(Message(conversation=conversation, role="user", content=f"question {index}"))
        rows.append(Message(conversation=conversation, role="assistant", content=f"**answer** {index}\n\n- a\n- b"))
    Message.objects.bulk_create(rows)
    Message.objects.bulk_update(branches.link_linear(list(conversation.messages.all())), ["parent", "selected"])


def test_a_conversation_page_reads_each_thing_it_shows_once(alice_client, make_conversation):
    conversation = make_conversation()
    add_turns(conversation, 3)
    url = reverse("chat:conversation", args=[conversation.pk])
    assert tables_read(alice_client, url) == CONVERSATION_PAGE
    html = alice_client.get(url).content.decode()
    # What those reads fed: the picker on the conversation's connection and model, the whole path.
    assert '<option value="local/chat" selected>' in html
    assert html.count('<article class="message') == 6


def test_a_live_link_adds_only_its_watchers_to_the_page(alice_client, make_conversation):
    conversation = make_conversation()
    Share.objects.create(owner=conversation.owner, source=conversation, live=True, title="Live")
    url = reverse("chat:conversation", args=[conversation.pk])
    shares = CONVERSATION_PAGE.index("sharing_share")
    expected = [*CONVERSATION_PAGE[: shares + 1], "sharing_watcher", *CONVERSATION_PAGE[shares + 1 :]]
    expected.remove("chat_attachment")  # no message, nothing to prefetch
    assert tables_read(alice_client, url) == expected
    html = alice_client.get(url).content.decode()
    # The one read of the links serves the badge (it polls while a link is live) and the delete confirmation.
    assert 'id="share-watching" hx-get=' in html
    assert "Its 1 share link will stop working" in html


def test_the_start_page_reads_the_connections_and_the_catalog_once(alice_client, make_conversation):
    make_conversation()
    assert tables_read(alice_client, reverse("chat:index")) == START_PAGE
    html = alice_client.get(reverse("chat:index")).content.decode()
    assert 'id="start-model"' in html and '<option value="local/chat" selected>' in html


def test_an_answer_left_streaming_by_a_dead_process_shows_as_interrupted_on_the_page(alice_client, make_conversation):
    """The page's sweep writes only when its path shows a streaming answer, and then shows it ended."""
    conversation = make_conversation()
    question = Message.objects.create(conversation=conversation, role="user", content="Hello?")
    answer = Message.objects.create(
        conversation=conversation,
        role="assistant",
        parent=question,
        content="Half an answer",
        status=Message.STREAMING,
        heartbeat=timezone.now() - timedelta(minutes=5),
    )
    html = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    answer.refresh_from_db()
    assert answer.status == Message.INTERRUPTED
    assert 'data-status="interrupted"' in html and 'data-status="streaming"' not in html


def test_a_conversation_whose_model_left_the_catalog_still_shows_it(alice_client, make_conversation):
    """The picker's one catalog read lists what the provider offers; the conversation's own model, no longer
    listed, is looked up only then (one query more) and stays offered and selected."""
    conversation = make_conversation(model_id="local/retired")
    CatalogModel.objects.create(
        connection=conversation.connection, model_id="local/retired", kind="chat", available=False
    )
    url = reverse("chat:conversation", args=[conversation.pk])
    expected = [table for table in CONVERSATION_PAGE if table != "chat_attachment"]  # no message yet
    catalog = expected.index("catalog_catalogmodel")
    expected.insert(catalog + 1, "catalog_catalogmodel")  # the conversation's own model, not listed
    assert tables_read(alice_client, url) == expected
    html = alice_client.get(url).content.decode()
    assert '<option value="local/retired" selected>local/retired (no longer listed)</option>' in html
