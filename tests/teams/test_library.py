"""The team library: "Move to team" on a conversation, rerank run, clip or batch; members read and fork every kind
(clips with their audio, batches with their requests and results); outsiders get 404; only the author edits."""

import json

import pytest
from django.urls import reverse

from playground.batches import services as batch_services
from playground.batches.models import Batch
from playground.chat.models import Conversation
from playground.connections.models import Connection
from playground.sharing.models import Share
from playground.speech.models import SpeechClip
from tests.teams.conftest import client_for

pytestmark = pytest.mark.django_db

AUDIO = b"ID3" + bytes(range(256)) * 8
REQUESTS = [{"model": "local/chat", "messages": [{"role": "user", "content": "Name a colour."}]}]


def own_connection(user):
    return Connection.objects.create(owner=user, name=f"{user}'s own", base_url="https://api.example.com/v1")


@pytest.fixture
def clip(alice):
    clip = SpeechClip.objects.create(
        owner=alice, model="local/tts", voice="local/tts:alex", text="[S1] Hello team.", status="complete"
    )
    clip.file = f"speech/{alice.pk}/{clip.pk}-test.mp3"
    clip.path.parent.mkdir(parents=True, exist_ok=True)
    clip.path.write_bytes(AUDIO)
    clip.bytes = len(AUDIO)
    clip.save()
    return clip


@pytest.fixture
def batch(alice, monkeypatch):
    batch = Batch.objects.create(
        owner=alice,
        connection=own_connection(alice),
        remote_id="batch_abc",
        input_file_id="file_in",
        input_filename="colours.jsonl",
        request_count=1,
        status="completed",
        request_counts={"total": 1, "completed": 1, "failed": 0},
        output_file_id="file_out",
    )
    lines = [{"custom_id": "request-1", "method": "POST", "url": "/v1/chat/completions", "body": REQUESTS[0]}]

    async def file_content(batch, file_id):
        return "\n".join(json.dumps(line) for line in lines).encode()

    async def results(batch):
        return [batch_services.Row(custom_id="request-1", prompt="Name a colour.", answer="Teal.", tokens=9)]

    monkeypatch.setattr(batch_services, "file_content", file_content)
    monkeypatch.setattr(batch_services, "results", results)
    return batch


def move(user, kind, pk, team):
    return client_for(user).post(reverse("teams:move", args=[kind, pk]), {"team": team.pk})


def test_move_to_team_lists_each_kind_with_its_author_and_fork_buttons(alice, bob, charlie, team, clip, batch):
    from playground.rerank.models import RerankRun

    conversation = Conversation.objects.create(owner=alice, title="Plans")
    run = RerankRun.objects.create(owner=alice, model="local/reranker", query="rivers", documents=["a"], results=[])
    for kind, item in (("conversation", conversation), ("rerank", run), ("speech", clip), ("batch", batch)):
        response = move(alice, kind, item.pk, team)
        assert response.status_code == 302 and response["Location"] == reverse("teams:detail", args=[team.pk])
    shares = Share.objects.filter(team=team, visibility=Share.TEAM, owner=alice)
    assert sorted(shares.values_list("kind", flat=True)) == ["batch", "conversation", "rerank", "speech"]
    assert shares.get(kind="conversation").live and shares.get(kind="conversation").expires is None
    # Moving again refreshes the same link, it does not add one.
    assert move(alice, "speech", clip.pk, team).status_code == 302 and shares.count() == 4
    page = client_for(bob).get(reverse("teams:detail", args=[team.pk])).content.decode()
    for label in ("Conversations", "Rerank runs", "Speech clips", "Batches"):
        assert label in page, label
    for share in shares:
        assert reverse("sharing:fork", args=[share.token]) in page and share.title in page
    assert page.count("by alice") == 4


def test_move_is_404_for_someone_elses_item_or_team(alice, bob, charlie, team, clip):
    assert move(bob, "speech", clip.pk, team).status_code == 404  # a member cannot move alice's clip
    assert move(charlie, "speech", clip.pk, team).status_code == 404
    own = SpeechClip.objects.create(owner=charlie, model="m", text="mine", status="complete")
    assert move(charlie, "speech", own.pk, team).status_code == 404  # not charlie's team
    assert move(alice, "evaluation", 1, team).status_code == 404
    assert not Share.objects.exists()


def test_a_member_forks_a_clip_with_its_audio_and_an_outsider_gets_404(alice, bob, charlie, team, clip):
    move(alice, "speech", clip.pk, team)
    share = Share.objects.for_source(clip).get()
    view, fork = reverse("sharing:view", args=[share.token]), reverse("sharing:fork", args=[share.token])
    assert client_for(charlie).get(view).status_code == 404
    assert client_for(charlie).post(fork, {"connection": own_connection(charlie).pk}).status_code == 404
    assert not SpeechClip.objects.filter(owner=charlie).exists()
    assert "Fork into my account" in client_for(bob).get(view).content.decode()
    mine = own_connection(bob)
    response = client_for(bob).post(fork, {"connection": mine.pk})
    copy = SpeechClip.objects.get(owner=bob)
    assert response.status_code == 302 and response["Location"] == reverse("speech:index")
    assert (copy.text, copy.model, copy.status, copy.connection) == (clip.text, clip.model, "complete", mine)
    assert copy.path != clip.path and copy.path.read_bytes() == AUDIO
    download = client_for(bob).get(reverse("speech:download", args=[copy.pk]))
    assert download.status_code == 200 and int(download["Content-Length"]) == len(AUDIO)
    # Read-only: the original stays alice's alone.
    assert client_for(bob).post(reverse("speech:delete", args=[clip.pk])).status_code == 404
    assert client_for(bob).post(reverse("sharing:update", args=[share.pk])).status_code == 404
    assert client_for(bob).post(reverse("sharing:revoke", args=[share.pk])).status_code == 404
    assert SpeechClip.objects.filter(pk=clip.pk).exists() and Share.objects.filter(pk=share.pk).exists()


def test_a_member_forks_a_batch_with_its_requests_and_results(alice, bob, charlie, team, batch):
    move(alice, "batch", batch.pk, team)
    share = Share.objects.for_source(batch).get()
    fork = reverse("sharing:fork", args=[share.token])
    assert client_for(charlie).get(fork).status_code == 404
    mine = own_connection(bob)
    response = client_for(bob).post(fork, {"connection": mine.pk})
    copy = Batch.objects.get(owner=bob)
    assert response.status_code == 302 and response["Location"] == reverse("batches:results", args=[copy.pk])
    assert copy.connection == mine and copy.status == "completed" and copy.usage_recorded and not copy.can_cancel
    assert copy.copy["requests"] == REQUESTS
    results = client_for(bob).get(response["Location"]).content.decode()
    assert "Name a colour." in results and "Teal." in results
    assert client_for(bob).get(reverse("batches:results", args=[batch.pk])).status_code == 404


def test_move_to_team_shows_only_for_a_user_in_a_team(alice, charlie, team):
    mine = Conversation.objects.create(owner=alice, title="Mine")
    theirs = Conversation.objects.create(owner=charlie, title="Theirs")
    page = client_for(alice).get(reverse("chat:conversation", args=[mine.pk])).content.decode()
    assert "Move to Research" in page and reverse("teams:move", args=["conversation", mine.pk]) in page
    page = client_for(charlie).get(reverse("chat:conversation", args=[theirs.pk])).content.decode()
    assert "Move to" not in page


def test_a_forked_batch_is_listed_with_its_results_and_can_be_shared_on(alice, bob, team, batch, monkeypatch):
    move(alice, "batch", batch.pk, team)
    share = Share.objects.for_source(batch).get()
    client_for(bob).post(reverse("sharing:fork", args=[share.token]), {"connection": own_connection(bob).pk})
    copy = Batch.objects.get(owner=bob)
    listing = client_for(bob).get(reverse("batches:index")).content.decode()
    assert reverse("batches:results", args=[copy.pk]) in listing

    async def no_provider(*args):
        raise AssertionError("a fork has no provider batch to read")

    monkeypatch.setattr(batch_services, "file_content", no_provider)
    monkeypatch.setattr(batch_services, "results", no_provider)
    assert move(bob, "batch", copy.pk, team).status_code == 302  # its frozen copy, not the provider's files
    again = Share.objects.for_source(copy).get()
    assert again.content["requests"] == REQUESTS and again.content["rows"][0]["answer"] == "Teal."
