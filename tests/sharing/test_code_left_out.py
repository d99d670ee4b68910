"""Issue 37 item 12: a request carries at most 10 messages (spec 8), so the View code of a longer conversation and the
Request JSON of a shared answer leave its earliest turns out: both say which, never silently. (The whole thread is not
put in the code: a provider refuses a request of more than 10 messages.)"""

import html
import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from playground.chat.models import Conversation, Message
from playground.connections.models import ensure_local_connection

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]

TURNS = 6  # 12 messages: with the next one, 13 for a request of at most 10


def long_conversation(owner, turns: int = TURNS, **fields) -> Conversation:
    conversation = Conversation.objects.create(
        owner=owner, connection=ensure_local_connection(owner), model_id="local/chat", title="Rivers", **fields
    )
    for n in range(1, turns + 1):
        Message.objects.create(conversation=conversation, role="user", content=f"Question {n} about rivers")
        Message.objects.create(
            conversation=conversation, role="assistant", content=f"Answer {n}", model_id="local/chat"
        )
    return conversation


def code_page(client, conversation) -> str:
    return html.unescape(client.get(reverse("sharing:code", args=["conversation", conversation.pk])).content.decode())


def test_view_code_says_which_turns_it_leaves_out(alice_client, alice, catalog):
    page = code_page(alice_client, long_conversation(alice))
    note = re.search(r'<p class="alert alert-warn small">(Not in this request:.*?)</p>', page, re.S)
    assert note, "View code leaves turns out without a word"
    assert "3 of 13 messages, your next one included" in note.group(1)
    assert "#1 user “Question 1 about rivers”, #2 assistant “Answer 1”, #3 user “Question 2 about rivers”" in (
        note.group(1)
    )
    assert "at most 10 messages" in note.group(1) and "the latest messages" in note.group(1)
    assert "Question 1 about rivers" not in page.replace(note.group(1), "")  # left out of the code itself
    assert page.count("Question 3 about rivers") >= 2  # the kept turns are in the snippets


def test_view_code_of_a_conversation_within_the_limit_has_no_such_note(alice_client, alice, catalog):
    page = code_page(alice_client, long_conversation(alice, turns=4))  # 8 messages, and the next one: 9
    assert "Question 1 about rivers" in page and "Not in this request" not in page


def test_view_code_names_the_first_question_kept_by_the_first_and_latest_policy(alice_client, alice, catalog):
    page = code_page(alice_client, long_conversation(alice, context_policy="first_and_latest"))
    note = re.search(r"Not in this request:.*?</p>", page, re.S).group(0)
    assert "#2 assistant “Answer 1”, #3 user “Question 2 about rivers”, #4 assistant “Answer 2”" in note
    assert "the first question and the latest messages" in note


def test_a_shared_answers_request_json_says_what_it_left_out(alice, bob, catalog, make_share):
    share = make_share(long_conversation(alice))
    viewer = Client()
    viewer.force_login(bob)
    page = html.unescape(viewer.get(reverse("sharing:view", args=[share.token])).content.decode())
    notes = re.findall(r'<p class="small muted share-request-note">(.*?)</p>', page, re.S)
    # Answers 1 to 5 had at most 9 messages before them; answer 6 had 11, of which #1 went out.
    assert len(notes) == 1 and "1 of the thread's 11 messages (#1 user “Question 1 about rivers”)" in notes[0]
    last = share.content["messages"][-1]
    assert len(last["request"]["messages"]) == 10 and json.dumps(last["request"]).count("Question 1 ") == 0
