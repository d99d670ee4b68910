"""A branched conversation: a share, its fork, the JSON and Markdown exports carry the selected path only."""

import pytest
from django.urls import reverse

from playground.chat import branches
from playground.chat.models import Conversation, Message
from playground.chat.sharing import transfer
from playground.connections.models import Connection
from tests.sharing.test_links import link

pytestmark = pytest.mark.django_db


@pytest.fixture
def branched(conversation):
    """The conversation's answer regenerated (the new one selected) and its question edited (not selected)."""
    question, answer = list(conversation.messages.order_by("pk"))
    branches.add(conversation, question.pk, role="assistant", content="Because of **the Moon** and inertia.")
    branches.add(conversation, None, role="user", content="Why do tides exist at all?", selected=False)
    # A later turn on the old answer's branch, hidden with it.
    branches.add(conversation, answer.pk, role="user", content="HIDDEN follow-up", selected=True)
    return conversation


def test_a_share_shows_the_selected_path(client, make_share, branched):
    html = client.get(link(make_share(branched))).content.decode()
    assert "the Moon" in html and "the Earth" not in html
    assert "HIDDEN" not in html and "Why do tides exist at all?" not in html
    assert html.count('class="message message-') == 2


def test_exports_carry_the_selected_path(branched):
    data = transfer.export_json(branched)
    assert [m["content"] for m in data["messages"]][-1] == "Because of **the Moon** and inertia."
    assert len(data["messages"]) == 2
    markdown = transfer.export_markdown(branched)
    assert "the Moon" in markdown and "the Earth" not in markdown and "HIDDEN" not in markdown


@pytest.mark.needs_local_api  # the fork lands on the viewer's Local connection
def test_a_fork_is_the_selected_path_as_a_linear_thread(client, bob, make_share, branched):
    share = make_share(branched)
    client.force_login(bob)
    local = Connection.objects.get(owner=bob, is_local=True)
    client.post(reverse("sharing:fork", args=[share.token]), {"connection": local.pk})
    copy = Conversation.objects.get(owner=bob)
    assert [m.content for m in branches.thread(copy)] == [
        "Why are there two tides a day?",
        "Because of **the Moon** and inertia.",
    ]
    rows = list(copy.messages.order_by("pk"))
    assert rows[1].parent_id == rows[0].pk and rows[0].parent_id is None


def test_an_import_is_linked_as_a_thread(alice):
    imported = transfer.parse(
        b'[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]'
    )
    conversation = transfer.create(imported, alice, None)
    assert [m.content for m in branches.thread(conversation)] == ["a", "b", "c"]
    assert Message.objects.filter(conversation=conversation, parent=None).count() == 1
