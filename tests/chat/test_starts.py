"""New chat: clicking it again does not save another empty conversation, and it starts with the model last used."""

from django.urls import reverse

from playground.chat.models import Conversation, Message


def test_new_chat_clicks_reuse_the_blank_conversation(alice_client, alice, catalog):
    first = alice_client.post(reverse("chat:create"))
    second = alice_client.post(reverse("chat:create"))
    assert Conversation.objects.filter(owner=alice).count() == 1
    assert first.url == second.url


def test_a_conversation_with_a_title_or_messages_is_not_reused(alice_client, alice, make_conversation):
    make_conversation(title="Kept on purpose")
    used = make_conversation()
    Message.objects.create(conversation=used, role="user", content="hi")
    alice_client.post(reverse("chat:create"))
    assert Conversation.objects.filter(owner=alice).count() == 3


def test_a_new_chat_starts_with_the_connection_and_model_last_used(alice_client, alice, make_conversation):
    used = make_conversation("local/reasoner")
    Message.objects.create(conversation=used, role="user", content="hi")
    Message.objects.create(conversation=used, role="assistant", content="hello", model_id="local/reasoner")
    alice_client.post(reverse("chat:create"))
    new = Conversation.objects.filter(owner=alice).exclude(pk=used.pk).get()
    assert (new.connection_id, new.model_id) == (used.connection_id, "local/reasoner")


def test_a_first_message_from_the_start_page_uses_the_model_last_used(alice_client, alice, make_conversation):
    used = make_conversation("local/reasoner")
    Message.objects.create(conversation=used, role="assistant", content="hello", model_id="local/reasoner")
    response = alice_client.post(reverse("chat:create"), {"content": "Hello again"})
    assert response.status_code == 302
    new = Conversation.objects.filter(owner=alice).exclude(pk=used.pk).get()
    assert new.model_id == "local/reasoner"
    assert new.messages.get(role="assistant").model_id == "local/reasoner"


def test_another_users_last_model_is_not_used(alice_client, alice, bob, make_conversation):
    theirs = make_conversation("local/reasoner", owner=bob)
    Message.objects.create(conversation=theirs, role="assistant", content="x")
    alice_client.post(reverse("chat:create"))
    assert Conversation.objects.get(owner=alice).model_id == ""
