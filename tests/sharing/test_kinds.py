"""Access rules for every kind of share: anonymous, signed-in, revoked, expired, another user's token."""

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from playground.batches import services as batch_services
from playground.batches.models import Batch
from playground.connections.models import ensure_local_connection
from playground.sharing.models import Share
from playground.speech.models import SpeechClip
from tests.sharing.conftest import AUDIO

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]

INPUT = [{"custom_id": "r1", "body": {"model": "local/chat", "messages": [{"role": "user", "content": "Name a tide"}]}}]
OUTPUT = [
    {"custom_id": "r1", "response": {"status_code": 200, "body": {"choices": [{"message": {"content": "Neap"}}]}}}
]


@pytest.fixture
def clip(alice):
    path = Path(settings.MEDIA_ROOT) / "speech" / str(alice.pk) / "kinds-test.wav"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(AUDIO)
    clip = SpeechClip.objects.create(
        owner=alice,
        connection=ensure_local_connection(alice),
        model="local/tts",
        voice="local/tts:alex",
        text="[S1] The tide turns.",
        response_format="wav",
        status=SpeechClip.COMPLETE,
        file=str(path.relative_to(settings.MEDIA_ROOT)),
        bytes=len(AUDIO),
    )
    yield clip
    path.unlink(missing_ok=True)


@pytest.fixture
def batch(alice, monkeypatch):
    files = {"file-in": INPUT, "file-out": OUTPUT}

    async def file_content(batch, file_id):
        return "\n".join(json.dumps(line) for line in files[file_id]).encode()

    monkeypatch.setattr(batch_services, "file_content", file_content)
    return Batch.objects.create(
        owner=alice,
        connection=ensure_local_connection(alice),
        remote_id="batch_1",
        input_file_id="file-in",
        output_file_id="file-out",
        input_filename="tides.jsonl",
        status="completed",
        request_counts={"total": 1, "completed": 1, "failed": 0},
    )


@pytest.fixture
def sources(conversation, rerank_pair, clip, batch):
    return {"conversation": conversation, "rerank": rerank_pair[1], "speech": clip, "batch": batch}


@pytest.mark.parametrize("kind", ["conversation", "rerank", "speech", "batch"])
def test_access_rules_for_every_kind(client, alice, bob, make_share, sources, kind):
    share = make_share(sources[kind])
    url = reverse("sharing:view", args=[share.token])
    page = client.get(url)
    assert page.status_code == 200 and page["X-Robots-Tag"].startswith("noindex")
    assert f'<meta property="og:title" content="{share.title}">' in page.content.decode()

    Share.objects.filter(pk=share.pk).update(visibility=Share.SIGNED_IN)
    client.logout()
    assert client.get(url).status_code == 404
    client.force_login(bob)
    assert client.get(url).status_code == 200
    assert client.post(reverse("sharing:revoke", args=[share.pk])).status_code == 404  # bob is not the owner

    Share.objects.filter(pk=share.pk).update(expires=timezone.now() - timedelta(seconds=1))
    assert client.get(url).status_code == 410  # a page in the site's layout says it expired
    Share.objects.filter(pk=share.pk).update(expires=None)
    owner = Client()
    owner.force_login(alice)
    owner.post(reverse("sharing:revoke", args=[share.pk]))
    assert client.get(url).status_code == 404


def test_a_shared_clip_plays_from_its_frozen_copy(client, make_share, clip):
    share = make_share(clip)
    page = client.get(reverse("sharing:view", args=[share.token])).content.decode()
    src = reverse("sharing:file", args=[share.token, "audio"])
    assert f'<audio controls preload="metadata" src="{src}"' in page
    assert "&quot;input&quot;: &quot;[S1] The tide turns.&quot;" in page
    part = client.get(src, HTTP_RANGE="bytes=0-3")
    assert part.status_code == 206 and b"".join(part) == AUDIO[:4]


def test_a_shared_batch_shows_its_requests_and_answers(client, make_share, batch):
    share = make_share(batch)
    page = client.get(reverse("sharing:view", args=[share.token])).content.decode()
    assert "Name a tide" in page and "Neap" in page and "tides.jsonl" in page


def test_a_streaming_clip_cannot_be_shared_yet(alice_client, clip):
    SpeechClip.objects.filter(pk=clip.pk).update(status=SpeechClip.STREAMING)
    page = alice_client.post(
        reverse("sharing:source", args=["speech", clip.pk]), {"visibility": "anyone", "expiry": "1d"}
    )
    assert "still being synthesized" in page.content.decode()
    assert not Share.objects.exists()
