"""The background-work helper: one registry per process, cancel by id, and one sweep rule for every kind."""

import asyncio
from datetime import timedelta

import pytest
from django.utils import timezone

from playground.chat.models import Conversation, Message
from playground.lib import detached
from playground.speech.models import SpeechClip


@pytest.mark.needs_local_api
def test_every_kind_of_background_job_is_registered_by_its_app():
    assert {"chat", "speech", "batch"} <= set(detached._kinds)
    assert "batch-runner" in detached._services


async def test_a_job_is_cancelled_by_id_and_leaves_the_registry():
    started = asyncio.Event()

    async def forever():
        started.set()
        await asyncio.sleep(3600)

    task = detached.spawn(forever(), name="test-job")
    detached.track("test", 7, task)
    await started.wait()
    assert detached.get("test", 7) is task and detached.keys("test") == [7]
    assert detached.cancel("test", 7)
    with pytest.raises(asyncio.CancelledError):
        await task
    detached.untrack("test", 7, task)
    assert detached.get("test", 7) is None and not detached.cancel("test", 7)


@pytest.mark.django_db
def test_the_sweep_ends_stale_rows_of_every_kind_but_not_live_or_fresh_ones(alice):
    old = timezone.now() - timedelta(seconds=detached.stale_seconds() + 30)
    conversation = Conversation.objects.create(owner=alice)
    dead = Message.objects.create(
        conversation=conversation, role="assistant", status="streaming", content="Half", heartbeat=old
    )
    mine = Message.objects.create(conversation=conversation, role="assistant", status="streaming", heartbeat=old)
    fresh = Message.objects.create(
        conversation=conversation, role="assistant", status="streaming", heartbeat=timezone.now()
    )
    clip = SpeechClip.objects.create(owner=alice, model="local/tts", text="hi", heartbeat=old)

    ended = detached.housekeep({"chat": [mine.pk]})

    assert ended["chat"] == 1 and ended["speech"] == 1
    statuses = {m.pk: (m.status, m.content) for m in Message.objects.all()}
    assert statuses[dead.pk] == ("interrupted", "Half")
    assert statuses[fresh.pk][0] == "streaming"
    # This process's own row is stamped, not ended.
    mine.refresh_from_db()
    assert mine.status == "streaming" and mine.heartbeat > old
    clip.refresh_from_db()
    assert clip.status == "incomplete" and clip.error["title"] == "Interrupted"


@pytest.mark.needs_local_api
def test_the_heartbeat_is_frequent_enough_for_the_shortest_stale_period(settings, monkeypatch):
    from playground.localapi.engines import batches

    settings.BACKGROUND_HEARTBEAT_SECONDS = 2
    monkeypatch.setenv("LOCAL_API_BATCH_STALE_SECONDS", "2")
    assert batches.stale_after() == 2
    assert detached.interval() == 0.5
