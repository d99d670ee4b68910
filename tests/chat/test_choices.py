"""n > 1: every choice streams (deltas carry the other choices' text), snapshots hold them, the saved answer has
them all, and "continue with this one" makes one the thread's answer for the next request."""

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from playground.chat import services
from playground.chat.choices import other_choices
from playground.chat.models import Message
from playground.chat.relay.display import render_message, snapshot_from_database
from tests.chat.conftest import connect, receive_until_final

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.needs_local_api,
]  # conversations on the Local connection


@pytest.mark.needs_local_api
async def test_the_other_choices_stream_as_deltas_and_are_saved(live_server, alice, make_conversation):
    conversation = await sync_to_async(make_conversation)(params={"n": 2})
    ws = await connect(conversation.pk, alice)
    # Long enough to outlast the send on a loaded machine (0.6 s seen), at the tests' 200 tokens a second.
    first, second = "One **first** " + "a " * 300 + "end.", "Two *second* here " + "b " * 300 + "end."
    turn = await services.send(conversation, f"two [say:{first}] [say:{second}]")
    events = await receive_until_final(ws, turn.assistant.pk)
    await ws.disconnect()
    deltas = [e for e in events if e["type"] == "delta"]
    seqs = [d["seq"] for d in deltas]
    assert seqs == sorted(set(seqs))
    assert "".join(d.get("choices", {}).get("1", "") for d in deltas) == second
    assert "".join(d["text"] for d in deltas) == first
    # The choices stream side by side: the second one's text arrives before the first one is over.
    first_of_second = next(i for i, d in enumerate(deltas) if d.get("choices"))
    last_of_first = max(i for i, d in enumerate(deltas) if d["text"])
    assert first_of_second < last_of_first
    message = await Message.objects.aget(pk=turn.assistant.pk)
    assert message.content == first and message.choices == [second]
    done = events[-1]["html"]
    assert 'role="tab"' in done and "<em>second</em>" in done and "Continue with this one" in done


def test_a_snapshot_from_the_database_holds_the_choices(make_conversation):
    conversation = make_conversation()
    message = Message.objects.create(
        conversation=conversation, role="assistant", status=Message.STREAMING, content="a", choices=["b", "c"]
    )
    snapshot = async_to_sync(snapshot_from_database)(message)
    assert snapshot["choices"] == ["b", "c"]


def test_tabs_are_rendered_for_the_requested_n_before_any_text_arrives(make_conversation):
    conversation = make_conversation()
    message = Message.objects.create(
        conversation=conversation, role="assistant", status=Message.STREAMING, params={"n": 3}
    )
    assert message.choice_count == 3
    assert [c["number"] for c in other_choices(message)] == [2, 3]
    html = render_message(message)
    assert html.count('role="tab"') == 3 and "Continue with this one" not in html


def test_choice_markdown_is_sanitized(make_conversation):
    conversation = make_conversation()
    message = Message.objects.create(
        conversation=conversation,
        role="assistant",
        content="ok",
        choices=["<script>alert(1)</script> [x](javascript:alert(1)) $\\href{javascript:alert(2)}{y}$ **b**"],
    )
    html = render_message(message)
    assert "<script" not in html and 'href="javascript' not in html
    assert "<strong>b</strong>" in html and '<span class="math math-inline">' in html


def test_continue_with_a_choice_makes_it_the_answer_the_next_request_sends(alice_client, make_conversation):
    conversation = make_conversation()
    Message.objects.create(conversation=conversation, role="user", content="Pick a colour")
    answer = Message.objects.create(
        conversation=conversation, role="assistant", content="Red", choices=["Green", "Blue"], params={"n": 3}
    )
    url = reverse("chat:choose", args=[conversation.pk, answer.pk, 3])
    response = alice_client.post(url, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert f'id="message-{answer.pk}"' in response.content.decode()
    answer.refresh_from_db()
    assert (answer.content, answer.choices) == ("Blue", ["Green", "Red"])
    body = services.preview_request(conversation, "And another?").body
    assert [m["content"] for m in body["messages"] if m["role"] == "assistant"] == ["Blue"]


def test_continue_with_is_refused_for_a_bad_choice_a_running_answer_and_another_user(
    alice_client, bob, make_conversation
):
    conversation = make_conversation()
    answer = Message.objects.create(conversation=conversation, role="assistant", content="A", choices=["B"])
    bad = alice_client.post(reverse("chat:choose", args=[conversation.pk, answer.pk, 3]))
    assert bad.status_code == 400 and b"choice: pick one of 2 to 2" in bad.content  # refused input, as every branch op
    other = Client()
    other.force_login(bob)
    assert other.post(reverse("chat:choose", args=[conversation.pk, answer.pk, 2])).status_code == 404
    # Stamped as a live generation stamps it: the suite's heartbeat sweep (of an earlier server test) ends rows never
    # stamped as interrupted, and the choice would then be allowed.
    Message.objects.filter(pk=answer.pk).update(status=Message.STREAMING, heartbeat=timezone.now())
    assert alice_client.post(reverse("chat:choose", args=[conversation.pk, answer.pk, 2])).status_code == 400
    assert alice_client.get(reverse("chat:choose", args=[conversation.pk, answer.pk, 2])).status_code == 405
    answer.refresh_from_db()
    assert (answer.content, answer.choices) == ("A", ["B"])


async def test_continue_with_is_a_socket_action_announced_to_the_other_tabs_and_live_viewers(
    live_server, alice, make_conversation
):
    """Issue 32 item 4: the choice is a command (commands.OPERATIONS["choose"]) with its socket action; the tab that
    chose gets the thread, another tab hears that the thread changed and gets the answer's new render, and a live
    viewer of the conversation's link shows the new answer in place."""
    from channels.testing import WebsocketCommunicator

    from playground.asgi import application
    from playground.sharing.freeze import freeze
    from playground.sharing.models import Share
    from tests.chat.conftest import ORIGIN
    from tests.chat.test_socket_actions import reply_to

    def seeded():
        conversation = make_conversation()
        question = Message.objects.create(conversation=conversation, role="user", content="Pick a colour")
        answer = Message.objects.create(
            conversation=conversation, role="assistant", content="Red", choices=["Green", "Blue"], params={"n": 3}
        )
        share = Share(owner=conversation.owner, title="Colours", live=True)
        share.source = conversation
        share.save()
        freeze(share)
        return conversation, question, answer, share

    conversation, question, answer, share = await sync_to_async(seeded)()
    chooser, other = await connect(conversation.pk, alice), await connect(conversation.pk, alice)
    viewer = WebsocketCommunicator(application, f"/ws/s/{share.token}/", headers=ORIGIN)
    assert (await viewer.connect())[0]
    await viewer.send_json_to({"type": "since", "have": [question.pk, answer.pk]})  # as the shared page does
    assert await viewer.receive_nothing(timeout=0.5)

    frame = {"action": "choose", "id": "c1", "tab": "tab-a", "message_id": answer.pk, "number": 3}
    await chooser.send_json_to(frame)
    reply = await reply_to(chooser, "c1")
    assert reply["type"] == "sent" and answer.pk in reply["message_ids"]
    assert f'id="message-{answer.pk}"' in reply["thread"] and "Blue" in reply["thread"]
    await answer.arefresh_from_db()
    assert (answer.content, answer.choices) == ("Blue", ["Green", "Red"])

    heard = [await other.receive_json_from(timeout=5), await other.receive_json_from(timeout=5)]
    assert {"type": "thread", "origin": "tab-a"} in heard
    done = next(event for event in heard if event["type"] == "done")
    assert done["message_id"] == answer.pk and '<div class="blocks"><p>Blue</p>' in done["html"]

    seen = await viewer.receive_json_from(timeout=5)
    assert seen["type"] == "done" and seen["message_id"] == answer.pk and "<p>Blue</p>" in seen["html"]

    await chooser.send_json_to({**frame, "id": "c2", "number": 4})  # refused input is `invalid`, in words
    refused = await reply_to(chooser, "c2")
    assert refused == {"type": "invalid", "errors": ["choice: pick one of 2 to 3 of a finished answer."], "id": "c2"}
    for socket in (chooser, other, viewer):
        await socket.disconnect()
