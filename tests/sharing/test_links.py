"""Share links: making, viewing, access rules, expiry, update, revoke, files, secrets, headers, fork."""

import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from playground.chat import branches
from playground.chat.models import Conversation, Message
from playground.rerank.models import RerankRun
from playground.sharing.models import TOKEN_BYTES, Share, SharedFile
from tests.sharing.conftest import AUDIO, BASE_URL, CONNECTION_NAME, SECRET_KEY_VALUE

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]


def link(share: Share) -> str:
    return reverse("sharing:view", args=[share.token])


def assert_no_secret(text: str) -> None:
    for secret in (SECRET_KEY_VALUE, CONNECTION_NAME, BASE_URL, "acme-internal"):
        assert secret not in text


# ---------------------------------------------------------------- making a link


def test_the_owner_makes_a_link_from_the_share_page(alice_client, conversation):
    url = reverse("sharing:source", args=["conversation", conversation.pk])
    response = alice_client.post(url, {"visibility": "anyone", "expiry": "7d"}, follow=True)
    share = Share.objects.get()
    assert share.source == conversation and share.owner == conversation.owner
    assert share.expires - timezone.now() > timedelta(days=6, hours=23)
    page = response.content.decode()
    assert f"/s/{share.token}" in page and "Copy link" in page


def test_tokens_are_random_urlsafe_and_at_least_128_bits(make_share, conversation):
    tokens = {make_share(conversation).token for _ in range(20)}
    assert len(tokens) == 20
    assert TOKEN_BYTES * 8 >= 128
    for token in tokens:
        assert re.fullmatch(r"[A-Za-z0-9_-]{32}", token)  # 32 base64 characters: 192 bits


def test_an_invalid_expiry_names_the_field(alice_client, conversation):
    url = reverse("sharing:source", args=["conversation", conversation.pk])
    response = alice_client.post(url, {"visibility": "anyone", "expiry": "forever"})
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert not Share.objects.exists()


# ---------------------------------------------------------------- access rules


def test_anyone_with_the_link_sees_the_frozen_conversation(client, make_share, conversation):
    share = make_share(conversation)
    response = client.get(link(share))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Why are there two tides a day?" in page
    assert "<strong>the Earth</strong>" in page
    assert "You are a careful physics tutor." in page
    assert "local/chat" in page and "temperature" in page
    # The request of the answer: model, parameters and the messages it was sent with.
    assert "&quot;temperature&quot;: 0.3" in page and "&quot;role&quot;: &quot;system&quot;" in page
    share.refresh_from_db()
    assert share.views == 1 and share.last_viewed is not None


def test_a_signed_in_link_is_404_for_anonymous_and_open_to_any_user(client, bob, make_share, conversation):
    share = make_share(conversation, visibility=Share.SIGNED_IN)
    assert client.get(link(share)).status_code == 404
    client.force_login(bob)
    assert client.get(link(share)).status_code == 200


def test_an_unknown_or_malformed_token_is_404(client):
    assert client.get("/s/" + "A" * 32 + "/").status_code == 404
    assert client.get("/s/short/").status_code == 404


def test_an_expired_link_is_410_once_the_time_passes(client, make_share, conversation, monkeypatch):
    share = make_share(conversation)
    share.set_expiry("1h")
    share.save()
    assert client.get(link(share)).status_code == 200
    later = timezone.now() + timedelta(hours=1, seconds=1)
    monkeypatch.setattr("playground.sharing.models.timezone.now", lambda: later)
    assert client.get(link(share)).status_code == 410
    assert client.get(reverse("sharing:file", args=[share.token, share.files.get().key])).status_code == 410


def test_never_expiring_links_have_no_date(make_share, conversation):
    share = make_share(conversation)
    share.set_expiry("never")
    assert share.expires is None and not share.expired


def test_another_users_source_and_links_are_404(bob_client, make_share, conversation):
    share = make_share(conversation)
    assert bob_client.get(reverse("sharing:source", args=["conversation", conversation.pk])).status_code == 404
    assert bob_client.post(reverse("sharing:update", args=[share.pk])).status_code == 404
    assert bob_client.post(reverse("sharing:revoke", args=[share.pk])).status_code == 404
    assert bob_client.get(reverse("sharing:watching", args=[conversation.pk])).status_code == 404
    assert Share.objects.filter(pk=share.pk).exists()
    assert share.title not in bob_client.get(reverse("sharing:index")).content.decode()


def test_sources_of_every_kind_are_404_for_another_user(bob_client, rerank_pair):
    base, _ = rerank_pair
    for kind, pk in (("rerank", base.pk), ("speech", 1), ("batch", 1), ("nonsense", 1)):
        assert bob_client.get(reverse("sharing:source", args=[kind, pk])).status_code == 404


# ---------------------------------------------------------------- update, revoke, delete


def test_update_refreshes_the_content_and_keeps_the_url(client, alice_client, make_share, conversation):
    share = make_share(conversation)
    token = share.token
    Message.objects.create(conversation=conversation, role="user", content="And spring tides?")
    assert "And spring tides?" not in client.get(link(share)).content.decode()  # added later: not shared
    alice_client.post(reverse("sharing:update", args=[share.pk]))
    share.refresh_from_db()
    assert share.token == token
    assert "And spring tides?" in client.get(link(share)).content.decode()


def test_revoke_makes_the_link_and_its_files_404_at_once(
    client, alice_client, make_share, conversation, django_capture_on_commit_callbacks
):
    share = make_share(conversation)
    file_url = reverse("sharing:file", args=[share.token, share.files.get().key])
    path = share.files.get().path
    assert client.get(file_url).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        alice_client.post(reverse("sharing:revoke", args=[share.pk]))
    assert client.get(link(share)).status_code == 404
    assert client.get(file_url).status_code == 404
    assert not path.exists()


def test_deleting_the_source_deletes_its_links_and_the_confirmation_lists_them(
    alice_client, make_share, conversation, django_capture_on_commit_callbacks
):
    share = make_share(conversation)
    page = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert f"/s/{share.token[:8]}" in page and "1 share link will stop working" in page
    path = share.files.get().path
    with django_capture_on_commit_callbacks(execute=True):
        alice_client.post(reverse("chat:delete", args=[conversation.pk]))
    assert not Share.objects.exists() and not SharedFile.objects.exists()
    assert not path.exists()


def test_the_shared_links_page_lists_every_link_with_its_facts(alice_client, make_share, conversation, rerank_pair):
    first = make_share(conversation)
    second = make_share(rerank_pair[1], visibility=Share.SIGNED_IN)
    Client().get(link(first))
    page = alice_client.get(reverse("sharing:index")).content.decode()
    for share in (first, second):
        assert f"/s/{share.token}" in page
        assert reverse("sharing:update", args=[share.pk]) in page
        assert reverse("sharing:revoke", args=[share.pk]) in page
    assert "Signed-in users of this playground" in page and "Anyone with the link" in page
    assert "ago" in page  # last viewed


# ---------------------------------------------------------------- files


def test_files_are_copied_at_share_time_and_served_with_range(client, make_share, conversation):
    share = make_share(conversation)
    frozen = share.files.get()
    original = conversation.messages.get(role="user").attachments.get()
    assert frozen.path != original.file.path and frozen.path.read_bytes() == AUDIO
    original.file.storage.delete(original.file.name)  # the source's file is gone; the share still has its own
    url = reverse("sharing:file", args=[share.token, frozen.key])
    whole = client.get(url)
    assert whole.status_code == 200 and b"".join(whole) == AUDIO
    assert whole["Accept-Ranges"] == "bytes" and whole["Content-Type"] == "audio/wav"
    part = client.get(url, HTTP_RANGE="bytes=100-199")
    assert part.status_code == 206 and part["Content-Range"] == f"bytes 100-199/{len(AUDIO)}"
    assert b"".join(part) == AUDIO[100:200]
    tail = client.get(url, HTTP_RANGE="bytes=-10")
    assert b"".join(tail) == AUDIO[-10:]
    assert client.get(url, HTTP_RANGE=f"bytes={len(AUDIO)}-").status_code == 416
    assert whole["X-Robots-Tag"].startswith("noindex") and "sandbox" in whole["Content-Security-Policy"]


def test_a_file_of_another_share_is_404_under_this_token(client, make_share, conversation, rerank_pair):
    with_file = make_share(conversation)
    other = make_share(rerank_pair[0])
    key = with_file.files.get().key
    assert client.get(reverse("sharing:file", args=[other.token, key])).status_code == 404


# ---------------------------------------------------------------- secrets and headers


def test_no_key_connection_name_or_base_url_in_any_share_response(client, make_share, conversation, rerank_pair):
    shares = [make_share(conversation), make_share(rerank_pair[1])]
    for share in shares:
        assert_no_secret(json.dumps(share.content))
        response = client.get(link(share))
        assert_no_secret(response.content.decode())
        for item in share.files.all():
            body = b"".join(client.get(reverse("sharing:file", args=[share.token, item.key])))
            assert SECRET_KEY_VALUE.encode() not in body


def test_share_pages_send_privacy_headers_and_open_graph_tags(client, make_share, conversation):
    share = make_share(conversation)
    response = client.get(link(share))
    assert response["X-Robots-Tag"].startswith("noindex")
    assert response["Referrer-Policy"] == "no-referrer"
    policy = response["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy and "unsafe" not in policy
    page = response.content.decode()
    assert '<meta property="og:title" content="Tides and the moon">' in page
    assert '<meta property="og:description" content="A conversation with local/chat, 2 messages.">' in page


def test_a_rerank_comparison_is_shared_side_by_side(client, make_share, rerank_pair):
    share = make_share(rerank_pair[1])
    page = client.get(link(share)).content.decode()
    assert "local/rerank-lite" in page and "local/rerank" in page
    assert "▲ 1" in page and "▼ 1" in page  # the rank changes of B against A
    assert "&quot;query&quot;: &quot;what causes tides&quot;" in page


# ---------------------------------------------------------------- fork


def test_fork_needs_sign_in(client, make_share, conversation):
    share = make_share(conversation)
    response = client.get(reverse("sharing:fork", args=[share.token]))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_fork_copies_the_conversation_and_its_files_into_the_viewers_account(client, bob, make_share, conversation):
    share = make_share(conversation)
    client.force_login(bob)
    page = client.get(reverse("sharing:fork", args=[share.token])).content.decode()
    assert "Local" in page
    from playground.connections.models import Connection

    local = Connection.objects.get(owner=bob, is_local=True)
    response = client.post(reverse("sharing:fork", args=[share.token]), {"connection": local.pk})
    copy = Conversation.objects.get(owner=bob)
    assert response["Location"] == reverse("chat:conversation", args=[copy.pk])
    assert copy.connection == local and copy.model_id == "local/chat"
    assert copy.system_prompt == conversation.system_prompt and copy.params == conversation.params
    assert [m.content for m in copy.messages.all()] == [m.content for m in conversation.messages.all()]
    attachment = copy.messages.get(role="user").attachments.get()
    assert attachment.read() == AUDIO and attachment.file.name.startswith(f"chat/{bob.pk}/")
    attachment.file.storage.delete(attachment.file.name)


def test_fork_onto_a_connection_without_the_model_leaves_the_model_to_choose(client, bob, make_share, conversation):
    from playground.connections.models import Connection

    share = make_share(conversation)
    elsewhere = Connection(owner=bob, name="Bob's gateway", base_url="https://api.example.com/v1")
    elsewhere.set_key("sk-bob")
    elsewhere.save()
    client.force_login(bob)
    response = client.post(reverse("sharing:fork", args=[share.token]), {"connection": elsewhere.pk}, follow=True)
    copy = Conversation.objects.get(owner=bob)
    assert copy.connection == elsewhere and copy.model_id == ""
    assert "local/chat is not offered by Bob&#x27;s gateway" in response.content.decode()


def test_fork_of_a_rerank_run(client, bob, make_share, rerank_pair):
    from playground.connections.models import Connection

    share = make_share(rerank_pair[0])
    client.force_login(bob)
    local = Connection.objects.get(owner=bob, is_local=True)
    client.post(reverse("sharing:fork", args=[share.token]), {"connection": local.pk})
    run = RerankRun.objects.get(owner=bob)
    assert run.query == "what causes tides" and [r["index"] for r in run.ranked()] == [0, 2]


def test_fork_refuses_a_connection_of_another_user(client, alice, bob, make_share, conversation, hosted):
    share = make_share(conversation)
    client.force_login(bob)
    response = client.post(reverse("sharing:fork", args=[share.token]), {"connection": hosted.pk})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not Conversation.objects.filter(owner=bob).exists()


def test_a_500_message_share_renders_in_a_constant_number_of_queries(
    client, make_share, conversation, django_assert_max_num_queries
):
    Message.objects.bulk_create(
        Message(conversation=conversation, role="user" if i % 2 else "assistant", content=f"turn {i}")
        for i in range(498)
    )
    rows = list(conversation.messages.all())
    Message.objects.bulk_update(branches.link_linear(rows), ["parent", "selected"])
    share = make_share(conversation)
    with django_assert_max_num_queries(8):
        response = client.get(link(share))
    assert response.content.decode().count('class="message message-') == 500
