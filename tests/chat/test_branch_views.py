"""The message tree without an upstream: switch, delete and insert through their htmx views, the page's ‹ 2/3 ›
at a constant query count, the data migration of linear conversations, and per-user isolation."""

import importlib
import json

import pytest
from django.apps import apps
from django.urls import reverse

from playground.chat import branches, services
from playground.chat.models import Attachment, Conversation, Message
from playground.chat.services import branches as operations
from tests.chat.test_attachments import data_uri, png, upload

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]

HTMX = {"HX-Request": "true"}


def add(conversation, parent, role, content, **fields):
    return branches.add(conversation, parent.pk if parent else None, role=role, content=content, **fields)


@pytest.fixture
def tree(make_conversation):
    """q1 ─ a1 ─ q2 ─ a2, with a1' a regenerated sibling of a1 (selected) and q1' an edit of q1 (not selected)."""
    conversation = make_conversation()
    q1 = add(conversation, None, "user", "first question")
    a1 = add(conversation, q1, "assistant", "first answer")
    q2 = add(conversation, a1, "user", "second question")
    a2 = add(conversation, q2, "assistant", "second answer")
    a1b = add(conversation, q1, "assistant", "first answer, again")
    q1b = add(conversation, None, "user", "first question, edited", selected=False)
    return conversation, dict(q1=q1, a1=a1, q2=q2, a2=a2, a1b=a1b, q1b=q1b)


def contents(conversation) -> list[str]:
    return [m.content for m in branches.thread(Conversation.objects.get(pk=conversation.pk))]


def post(client, name, conversation, *args, data=None):
    return client.post(reverse(f"chat:{name}", args=[conversation.pk, *args]), data or {}, headers=HTMX)


def test_the_page_shows_the_selected_path_with_its_sibling_counts(alice_client, tree):
    conversation, _m = tree
    html = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert "first answer, again" in html and "second question" not in html and "first question, edited" not in html
    assert "{#" not in html and "{%" not in html
    assert html.count('class="sibling-count mono">1/2<') == 1  # q1 of q1, q1'
    assert html.count('class="sibling-count mono">2/2<') == 1  # a1' of a1, a1'


def test_switching_is_saved_and_brings_back_the_whole_continuation(alice_client, tree):
    conversation, m = tree
    response = post(alice_client, "switch", conversation, m["a1"].pk)
    assert response.status_code == 200
    html = response.content.decode()
    assert "second answer" in html and 'class="sibling-count mono">1/2<' in html
    assert contents(conversation) == ["first question", "first answer", "second question", "second answer"]
    post(alice_client, "switch", conversation, m["q1b"].pk)
    assert contents(conversation) == ["first question, edited"]


def test_deleting_a_message_keeps_what_followed_it(alice_client, tree):
    conversation, m = tree
    post(alice_client, "switch", conversation, m["a1"].pk)
    assert post(alice_client, "delete_message", conversation, m["q2"].pk).status_code == 200
    assert contents(conversation) == ["first question", "first answer", "second answer"]
    # Deleting an answer that is not selected leaves the selected sibling where it is.
    post(alice_client, "delete_message", conversation, m["a1b"].pk)
    assert contents(conversation) == ["first question", "first answer", "second answer"]
    assert not Message.objects.filter(pk__in=[m["q2"].pk, m["a1b"].pk]).exists()


def test_a_streaming_answer_is_not_deleted(alice_client, make_conversation):
    conversation = make_conversation()
    q = add(conversation, None, "user", "hi")
    live = add(conversation, q, "assistant", "", status=Message.STREAMING)
    response = post(alice_client, "delete_message", conversation, live.pk)
    assert response.status_code == 400 and "message_id: the answer is still being generated" in response.text
    assert Message.objects.filter(pk=live.pk).exists()


def test_insert_puts_a_message_of_any_role_anywhere(alice_client, tree):
    conversation, m = tree
    post(alice_client, "switch", conversation, m["a1"].pk)
    post(alice_client, "insert", conversation, data={"after": "", "role": "system", "content": "Be brief."})
    post(alice_client, "insert", conversation, data={"after": m["a1"].pk, "role": "tool", "content": "42"})
    assert contents(conversation) == [
        "Be brief.",
        "first question",
        "first answer",
        "42",
        "second question",
        "second answer",
    ]
    # The edited first question moved under the system message too: it is still the first question's sibling.
    thread = branches.thread(Conversation.objects.get(pk=conversation.pk))
    assert thread[1].sibling_count == 2
    response = post(alice_client, "insert", conversation, data={"after": "", "role": "robot", "content": "x"})
    assert response.status_code == 400 and "role: one of system, user, assistant, tool" in response.text
    response = post(alice_client, "insert", conversation, data={"after": "", "role": "user", "content": "  "})
    assert response.status_code == 400 and "content: write the message" in response.text


def test_edit_and_regenerate_refuse_the_wrong_role(alice_client, tree):
    conversation, m = tree
    response = post(alice_client, "edit", conversation, m["a1"].pk, data={"content": "x"})
    assert response.status_code == 400 and "only a user message can be edited" in response.text
    response = post(alice_client, "regenerate", conversation, m["q1"].pk)
    assert response.status_code == 400 and "only an answer can be regenerated" in response.text
    response = post(alice_client, "pick", conversation, m["a1"].pk)
    assert response.status_code == 400 and "not a column of an open comparison" in response.text


def test_another_users_conversation_and_messages_are_404(bob_client, tree, make_conversation, bob):
    conversation, m = tree
    for name, args in [
        ("switch", [m["a1"].pk]),
        ("delete_message", [m["q2"].pk]),
        ("edit", [m["q1"].pk]),
        ("regenerate", [m["a1"].pk]),
        ("pick", [m["a1"].pk]),
        ("insert", []),
        ("compare", []),
    ]:
        assert post(bob_client, name, conversation, *args, data={"content": "x", "role": "user"}).status_code == 404
    # A message id of another conversation is a 404 too, even in one's own.
    own = make_conversation(owner=bob)
    assert post(bob_client, "switch", own, m["a1"].pk).status_code == 404
    assert contents(conversation) == ["first question", "first answer, again"]


def test_a_branched_conversation_of_500_messages_opens_with_a_bounded_number_of_queries(
    alice_client, make_conversation, django_assert_max_num_queries
):
    conversation = make_conversation()
    Message.objects.bulk_create(
        Message(conversation=conversation, role="user" if i % 2 == 0 else "assistant", content=f"message {i}")
        for i in range(500)
    )
    rows = list(conversation.messages.all())
    Message.objects.bulk_update(branches.link_linear(rows), ["parent", "selected"])
    for i in range(1, 400, 40):  # ten answers with two unselected siblings each
        for _ in range(2):
            add(conversation, rows[i - 1], "assistant", "another answer", selected=False)
    alice_client.get(reverse("chat:conversation", args=[conversation.pk]))
    with django_assert_max_num_queries(17):  # as for a short one (test_views)
        html = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert html.count('<article class="message') == 500
    assert html.count('class="sibling-count mono">1/3<') == 10


def test_the_data_migration_links_a_linear_conversation(make_conversation):
    conversation = make_conversation()
    Message.objects.bulk_create(
        Message(conversation=conversation, role="user" if i % 2 == 0 else "assistant", content=str(i), selected=False)
        for i in range(5)
    )
    assert contents(conversation) == ["4"]  # unlinked rows are five first messages: the latest is shown
    migration = importlib.import_module("playground.chat.migrations.0005_message_tree_links")
    migration.link(apps, None)
    assert contents(conversation) == ["0", "1", "2", "3", "4"]
    rows = list(conversation.messages.order_by("pk"))
    assert [r.parent_id for r in rows] == [None] + [r.pk for r in rows[:-1]]


def test_a_message_created_without_a_parent_follows_the_selected_path(make_conversation):
    conversation = make_conversation()
    q = add(conversation, None, "user", "q")
    a = add(conversation, q, "assistant", "a")
    add(conversation, q, "assistant", "a, unselected", selected=False)
    tool = Message.objects.create(conversation=conversation, role="tool", content="result")
    assert tool.parent_id == a.pk
    assert contents(conversation) == ["q", "a", "result"]


def test_duplicate_copies_the_tree(make_conversation, tree):
    conversation, _m = tree
    copy = conversation.duplicate()
    assert contents(copy) == contents(conversation)
    assert copy.messages.count() == conversation.messages.count()
    thread = branches.thread(copy)
    assert [(x.sibling_index, x.sibling_count) for x in thread] == [(1, 2), (2, 2)]


def test_an_edited_message_keeps_its_files_in_the_request_and_in_storage(
    make_conversation, settings, tmp_path, django_capture_on_commit_callbacks
):

    settings.MEDIA_ROOT = tmp_path
    conversation = make_conversation("local/vision")
    image = png()
    first = services.prepare_turn(conversation, "what is this?", attachments=[upload("dot.png", image, "image/png")])
    original = first.user_message
    kept = list(original.attachments.all())
    edited = services.prepare_turn(conversation, "what colour is this?", parent=original.parent_id, kept=kept)
    assert edited.request.body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what colour is this?"},
                {"type": "image_url", "image_url": {"url": data_uri("image/png", image)}},
            ],
        }
    ]
    copy = Attachment.objects.get(message=edited.user_message)
    assert copy.file.name == kept[0].file.name
    # The original's row goes; the file stays while the edited version refers to it.
    Message.objects.filter(pk=first.assistant.pk).update(status=Message.COMPLETE)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        operations._delete(conversation, {"message_id": original.pk})
    assert callbacks and (tmp_path / copy.file.name).read_bytes() == image
    # Once the last row referring to it goes, so does the file.
    with django_capture_on_commit_callbacks(execute=True):
        operations._delete(conversation, {"message_id": edited.user_message.pk})
    assert not (tmp_path / copy.file.name).exists()


@pytest.mark.django_db(transaction=True)
async def test_other_tabs_hear_that_the_thread_changed_with_the_tab_that_changed_it(alice, async_client, tree):
    from asgiref.sync import sync_to_async

    from tests.chat.conftest import connect

    conversation, m = tree
    await async_client.aforce_login(alice)
    ws = await connect(conversation.pk, alice)
    response = await async_client.post(
        reverse("chat:switch", args=[conversation.pk, m["a1"].pk]), headers={**HTMX, "X-Chat-Tab": "tab-1"}
    )
    assert response.status_code == 200
    assert await ws.receive_json_from(timeout=5) == {"type": "thread", "origin": "tab-1"}
    await ws.disconnect()
    assert (await sync_to_async(contents)(conversation))[-1] == "second answer"


def test_switching_to_a_message_off_the_path_selects_its_ancestors_too(alice_client, tree):
    conversation, m = tree
    # a2 is on a1's branch, which is not selected: switching to it brings its whole path.
    post(alice_client, "switch", conversation, m["a2"].pk)
    assert contents(conversation) == ["first question", "first answer", "second question", "second answer"]
    assert Message.objects.filter(conversation=conversation, parent=m["q1"], selected=True).count() == 1


def test_tool_results_follow_the_answer_that_called_them_on_its_branch(make_conversation):
    conversation = make_conversation("local/tools")
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
    q = add(conversation, None, "user", "Weather in Paris?")
    caller = add(conversation, q, "assistant", "", tool_calls=[call])
    assert services.pending_calls(conversation)[0] == caller
    # Regenerated without a tool call: the selected answer waits for nothing.
    plain = add(conversation, q, "assistant", "Sunny, probably.")
    assert services.pending_calls(conversation) == (None, [])
    operations._switch(conversation, {"message_id": caller.pk})
    turn = services.prepare_turn(conversation, None, tool_results=[("call_1", "18 C")])
    tool = Message.objects.get(conversation=conversation, role="tool")
    assert (tool.parent_id, turn.assistant.parent_id) == (caller.pk, tool.pk)
    assert turn.request.body["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}
    assert [m["role"] for m in turn.request.body["messages"]] == ["user", "assistant", "tool"]
    assert plain.content not in json.dumps(turn.request.body)
    assert [m.role for m in branches.thread(conversation)] == ["user", "assistant", "tool", "assistant"]
