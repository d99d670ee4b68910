"""Chat pages and conversation management: alice's conversations are hers alone."""

import json

import pytest
from django.urls import reverse

from playground.chat import branches, services
from playground.chat.models import Conversation, Message
from playground.chat.relay.generation import running
from tests.chat.conftest import connect, finish
from tests.waiting import until

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]


def test_the_empty_chat_page_says_what_to_do(alice_client, catalog):
    response = alice_client.get(reverse("chat:index"))
    assert response.status_code == 200
    assert "No conversations yet" in response.content.decode()


def test_new_chat_saves_nothing_until_the_first_message(alice_client, alice, catalog):
    response = alice_client.post(reverse("chat:create"))
    assert response.status_code == 302 and response.url == reverse("chat:index")
    assert not Conversation.objects.filter(owner=alice).exists()
    page = alice_client.get(reverse("chat:index")).content.decode()
    # New chat is a link to the start page, not a form that saves a conversation.
    assert f'<a href="{reverse("chat:index")}" class="btn btn-primary new-chat">' in page
    assert not Conversation.objects.filter(owner=alice).exists()


def test_the_title_comes_from_the_first_message_and_can_be_renamed(alice_client, make_conversation):
    conversation = make_conversation()
    services.prepare_turn(conversation, "How do rivers shape valleys over thousands of years, and why do some meander?")
    conversation.refresh_from_db()
    assert conversation.title == "How do rivers shape valleys over thousands of years, and…"
    services.prepare_turn(conversation, "A second question")
    conversation.refresh_from_db()
    assert conversation.title.startswith("How do rivers")

    alice_client.post(reverse("chat:rename", args=[conversation.pk]), {"title": "Valleys"})
    conversation.refresh_from_db()
    assert conversation.title == "Valleys"


def test_the_list_is_newest_first_and_searches_titles_and_contents(alice_client, make_conversation, bob):
    old = make_conversation(title="Rivers")
    new = make_conversation(title="Mountains")
    Message.objects.create(conversation=old, role="user", content="tell me about the Danube delta")
    make_conversation(title="Bob's Danube notes", owner=bob)
    old.save()  # touched last: now the newest

    page = alice_client.get(reverse("chat:index")).content.decode()
    assert page.index("Rivers") < page.index("Mountains")
    by_content = alice_client.get(reverse("chat:search"), {"q": "danube"}).content.decode()
    assert "Rivers" in by_content and "Mountains" not in by_content and "Bob" not in by_content
    by_title = alice_client.get(reverse("chat:search"), {"q": "mount"}).content.decode()
    assert "Mountains" in by_title and "Rivers" not in by_title
    assert new.pk


def test_duplicate_copies_the_settings_and_the_messages(alice_client, make_conversation):
    conversation = make_conversation(title="Original", system_prompt="Be brief.", params={"temperature": 0.2})
    Message.objects.create(conversation=conversation, role="user", content="question")
    Message.objects.create(conversation=conversation, role="assistant", content="answer", reasoning="thought")
    response = alice_client.post(reverse("chat:duplicate", args=[conversation.pk]))
    copy = Conversation.objects.exclude(pk=conversation.pk).get()
    assert response.url == reverse("chat:conversation", args=[copy.pk])
    assert (copy.title, copy.system_prompt, copy.params) == ("Original (copy)", "Be brief.", {"temperature": 0.2})
    assert list(copy.messages.values_list("role", "content", "reasoning")) == [
        ("user", "question", ""),
        ("assistant", "answer", "thought"),
    ]


def test_delete_removes_the_conversation_and_its_messages(alice_client, make_conversation):
    conversation = make_conversation()
    Message.objects.create(conversation=conversation, role="user", content="question")
    response = alice_client.post(reverse("chat:delete", args=[conversation.pk]))
    assert response.status_code == 302
    assert not Conversation.objects.exists() and not Message.objects.exists()


def test_bob_gets_404_for_every_page_of_alices_conversation(bob_client, make_conversation):
    conversation = make_conversation()
    message = Message.objects.create(conversation=conversation, role="assistant", status="error", content="x")
    pk, mid = conversation.pk, message.pk
    gets = ["chat:conversation", "chat:panel", "chat:request_preview"]
    posts = ["chat:rename", "chat:duplicate", "chat:delete", "chat:send", "chat:settings"]
    for name in gets:
        assert bob_client.get(reverse(name, args=[pk])).status_code == 404, name
    for name in posts:
        assert bob_client.post(reverse(name, args=[pk]), {"content": "hi", "title": "mine"}).status_code == 404, name
    for name in ["chat:stop", "chat:retry"]:
        assert bob_client.post(reverse(name, args=[pk, mid])).status_code == 404, name
    conversation.refresh_from_db()
    assert conversation.title == "" and Message.objects.count() == 1


@pytest.mark.django_db(transaction=True)
async def test_bob_cannot_subscribe_to_alices_websocket(alice, bob, make_conversation):
    from asgiref.sync import sync_to_async
    from channels.testing import WebsocketCommunicator

    from playground.asgi import application
    from tests.chat.conftest import ORIGIN

    conversation = await sync_to_async(make_conversation)()
    ws = WebsocketCommunicator(application, f"/ws/chat/{conversation.pk}/", headers=ORIGIN)
    ws.scope["user"] = bob
    await ws.connect()
    assert (await ws.receive_output(timeout=2)) == {"type": "websocket.close", "code": 4404}

    anonymous = WebsocketCommunicator(application, f"/ws/chat/{conversation.pk}/", headers=ORIGIN)
    await anonymous.connect()
    assert (await anonymous.receive_output(timeout=2)) == {"type": "websocket.close", "code": 4403}

    foreign = WebsocketCommunicator(
        application,
        f"/ws/chat/{conversation.pk}/",
        headers=[(b"origin", b"http://evil.example"), (b"host", b"127.0.0.1")],
    )
    foreign.scope["user"] = alice
    connected, _ = await foreign.connect()
    assert not connected


def test_a_conversation_of_500_messages_opens_with_a_bounded_number_of_queries(
    alice_client, make_conversation, django_assert_max_num_queries
):
    conversation = make_conversation()
    Message.objects.bulk_create(
        Message(
            conversation=conversation,
            role="user" if i % 2 == 0 else "assistant",
            content=f"message **{i}**",
            usage={"prompt_tokens": 5, "completion_tokens": 7} if i % 2 else None,
            trace_id=f"trace-{i}" if i % 2 else "",
        )
        for i in range(500)
    )
    rows = list(conversation.messages.all())
    Message.objects.bulk_update(branches.link_linear(rows), ["parent", "selected"])
    alice_client.get(reverse("chat:conversation", args=[conversation.pk]))  # the once-per-process sweep
    # 17: the Share menu's "Move to team" asks for the user's teams; the compare form lists their prompt versions
    with django_assert_max_num_queries(17):
        response = alice_client.get(reverse("chat:conversation", args=[conversation.pk]))
    html = response.content.decode()
    assert html.count('<article class="message') == 500
    assert "<strong>499</strong>" in html


def test_invalid_parameters_are_refused_naming_the_field_and_the_limit(alice_client, make_conversation):
    conversation = make_conversation("local/reasoner")
    response = alice_client.post(
        reverse("chat:send", args=[conversation.pk]),
        {"content": "hello", "thinking_budget": "50", "temperature": "0.5", "stream": "on"},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    assert response["HX-Retarget"] == "#panel"
    assert "thinking_budget: must be at least 128." in response.content.decode()
    assert not Message.objects.exists()


def test_an_empty_message_is_refused(alice_client, make_conversation):
    conversation = make_conversation()
    response = alice_client.post(
        reverse("chat:send", args=[conversation.pk]), {"content": "   "}, headers={"HX-Request": "true"}
    )
    assert response["HX-Retarget"] == "#composer" and "write something first" in response.content.decode()
    assert not Message.objects.exists()


def test_settings_are_validated_and_saved(alice_client, make_conversation):
    conversation = make_conversation()
    url = reverse("chat:settings", args=[conversation.pk])
    response = alice_client.post(url, {"temperature": "5", "stream": "on"}, headers={"HX-Request": "true"})
    assert "temperature: must be at most 2." in response.content.decode()
    conversation.refresh_from_db()
    assert conversation.params == {}

    alice_client.post(
        url,
        {
            "model": "local/reasoner",
            "system_prompt": "Be brief.",
            "context_policy": "first_and_latest",
            "temperature": "0.4",
            "thinking_budget": "2048",
            "enable_thinking": "on",
            "stream": "on",
            "stop": "END\nSTOP",
            "max_tokens": "1000",
        },
        headers={"HX-Request": "true"},
    )
    conversation.refresh_from_db()
    assert conversation.model_id == "local/reasoner" and conversation.system_prompt == "Be brief."
    assert conversation.context_policy == "first_and_latest"
    assert conversation.params["temperature"] == 0.4 and conversation.params["thinking_budget"] == 2048
    assert conversation.params["stop"] == ["END", "STOP"]
    body = services.preview_request(conversation).body
    assert body["max_tokens"] == 1000 and body["stop"] == ["END", "STOP"] and body["thinking_budget"] == 2048


def test_max_tokens_is_capped_by_the_models_output_limit(alice_client, make_conversation):
    conversation = make_conversation()
    response = alice_client.post(
        reverse("chat:settings", args=[conversation.pk]), {"max_tokens": "100000"}, headers={"HX-Request": "true"}
    )
    assert "max_tokens: must be at most 8192 for local/chat." in response.content.decode()


def test_tools_are_validated_and_sent_to_models_that_support_them(alice_client, make_conversation):
    conversation = make_conversation("local/tools")
    url = reverse("chat:settings", args=[conversation.pk])
    response = alice_client.post(
        url, {"tools": '[{"type": "function", "function": {"name": "bad name!"}}]'}, headers={"HX-Request": "true"}
    )
    assert "tools[0].function.name" in response.content.decode()
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    alice_client.post(url, {"tools": json.dumps(tools)}, headers={"HX-Request": "true"})
    conversation.refresh_from_db()
    assert services.preview_request(conversation).body["tools"] == tools


def test_the_panel_shows_only_the_parameters_the_model_supports(alice_client, make_conversation):
    conversation = make_conversation()
    url = reverse("chat:panel", args=[conversation.pk])
    reasoner = alice_client.get(url, {"model": "local/reasoner"}).content.decode()
    plain = alice_client.get(url, {"model": "local/chat"}).content.decode()
    assert 'name="thinking_budget"' in reasoner and 'name="min_p"' not in reasoner
    assert 'name="thinking_budget"' not in plain and 'name="temperature"' in plain
    conversation.refresh_from_db()
    assert conversation.model_id == "local/chat"


def test_the_request_preview_is_the_exact_body_and_never_the_key(alice_client, alice, make_conversation):
    conversation = make_conversation(system_prompt="Be brief.")
    key = alice.connections.get(is_local=True).get_key()
    response = alice_client.get(reverse("chat:request_preview", args=[conversation.pk]), {"content": "hi"})
    body = json.loads(response.content)
    assert body == services.preview_request(conversation, "hi").body
    assert body["messages"][-1] == {"role": "user", "content": "hi"} and body["stream"] is True
    assert key not in response.content.decode()
    page = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert key not in page


@pytest.mark.django_db(transaction=True)
async def test_send_returns_both_messages_and_the_answer_is_saved(live_server, alice, async_client, make_conversation):
    from asgiref.sync import sync_to_async

    conversation = await sync_to_async(make_conversation)()
    await async_client.aforce_login(alice)
    ws = await connect(conversation.pk, alice)
    response = await async_client.post(
        reverse("chat:send", args=[conversation.pk]),
        {"content": "write 30 words about rain"},
        headers={"HX-Request": "true"},
    )
    html = response.content.decode()
    assert html.count("<article") == 2 and 'data-role="user"' in html and 'data-status="streaming"' in html
    assistant = await Message.objects.aget(conversation=conversation, role="assistant")
    message = await finish(assistant.pk)
    await ws.disconnect()
    assert message.status == "complete" and message.content
    await conversation.arefresh_from_db()
    assert conversation.title == "write 30 words about rain"


@pytest.mark.django_db(transaction=True)
async def test_retry_replaces_a_failed_answer_once_the_new_one_is_complete(
    live_server, alice, async_client, make_conversation
):
    from asgiref.sync import sync_to_async

    conversation = await sync_to_async(make_conversation)()
    await async_client.aforce_login(alice)
    turn = await services.send(conversation, "hello [fault:503]")
    failed = await finish(turn.assistant.pk)
    assert failed.status == "error"
    # The fault directive is in the user message, so drop it before retrying.
    await Message.objects.filter(pk=turn.user_message.pk).aupdate(content="hello")
    response = await async_client.post(
        reverse("chat:retry", args=[conversation.pk, failed.pk]), headers={"HX-Request": "true"}
    )
    html = response.content.decode()
    assert 'data-status="streaming"' in html and f'data-message-id="{failed.pk}"' in html
    # The failed answer stays until the new one is complete, then goes.
    retried = await Message.objects.exclude(pk=failed.pk).aget(conversation=conversation, role="assistant")
    retried = await finish(retried.pk)
    assert retried.status == "complete" and retried.content
    assert not await Message.objects.filter(pk=failed.pk).aexists()


@pytest.mark.django_db(transaction=True)
async def test_the_stop_view_stops_a_running_answer(live_server, alice, async_client, make_conversation):
    from asgiref.sync import sync_to_async

    conversation = await sync_to_async(make_conversation)()
    await async_client.aforce_login(alice)
    turn = await services.send(conversation, "write 3000 words about the sea")
    generation = running(turn.assistant.pk)
    await until(lambda: generation.seq >= 20, timeout=30, what="twenty deltas")
    response = await async_client.post(
        reverse("chat:stop", args=[conversation.pk, turn.assistant.pk]), headers={"HX-Request": "true"}
    )
    assert response.status_code == 204
    message = await finish(turn.assistant.pk)
    assert message.status == "stopped" and message.content
