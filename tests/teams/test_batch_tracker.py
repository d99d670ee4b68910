"""A batch on a team connection is filed when it finishes, by the tracker, without any page view; exactly once even
when a page refresh and the tracker both see it finish."""

import time

import pytest
from asgiref.sync import async_to_sync

from playground.batches import services, tracker
from playground.batches.models import Batch
from playground.teams.models import UsageRecord
from tests.teams.test_requests import mint, team_setup

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def submit(http, connection) -> Batch:
    from tests.batches.conftest import HTMX

    data = {
        "connection": str(connection.pk),
        "source": "prompts",
        "model": "local/chat",
        "prompts": "Name a colour.\nSay hello.",
        "completion_window": "24h",
        "metadata_key": [""],
        "metadata_value": [""],
    }
    assert "created with 2 requests" in http.post("/batches/new/", data=data, headers=HTMX).text
    return Batch.objects.get(owner__username="bob")


def finished_rows(team, bob):
    return list(UsageRecord.objects.filter(team=team, user=bob, kind="batch").exclude(status="submitted"))


def test_the_tracker_files_a_finished_batch_once_without_a_page_view(live_server, team, alice, bob, http_for):
    connection = async_to_sync(team_setup)(team, alice, live_server.api_url, mint("team key of the test"))
    batch = submit(http_for(bob), connection)
    deadline = time.monotonic() + 60
    while not Batch.objects.get(pk=batch.pk).usage_recorded:
        assert time.monotonic() < deadline, "the tracker never saw the batch finish"
        async_to_sync(tracker.track_once)()
        time.sleep(0.2)
    [row] = finished_rows(team, bob)
    assert row.status == "completed" and row.prompt_tokens > 0 and row.completion_tokens > 0
    # A page that then refreshes the batch, and further passes, file nothing more.
    http_for(bob).get(f"/batches/{batch.pk}/refresh/")
    async_to_sync(tracker.track_once)()
    assert len(finished_rows(team, bob)) == 1


def test_a_page_and_the_tracker_seeing_the_end_together_file_it_once(live_server, team, alice, bob, http_for):
    connection = async_to_sync(team_setup)(team, alice, live_server.api_url, mint("team key of the test"))
    batch = submit(http_for(bob), connection)
    deadline = time.monotonic() + 60
    while Batch.objects.get(pk=batch.pk).status != "completed":
        assert time.monotonic() < deadline
        # Follow it without letting anything file the usage yet: the status alone, written as refresh would.
        fresh = Batch.objects.select_related("connection").get(pk=batch.pk)
        from playground.upstream import client

        endpoint = client.Endpoint(fresh.connection.url, fresh.connection.get_key(), trusted=True)
        data = async_to_sync(client.batch_get)(endpoint, fresh.remote_id).data
        fresh.apply(data)
        if not fresh.is_terminal:
            time.sleep(0.2)
            continue
        fresh.save(update_fields=Batch.SYNCED)
    # Two copies loaded before either filed (a page and the tracker), both filing: one row.
    first, second = (Batch.objects.select_related("connection").get(pk=batch.pk) for _ in range(2))

    async def both():
        import asyncio

        await asyncio.gather(services.record_usage(first), services.record_usage(second))

    async_to_sync(both)()
    assert len(finished_rows(team, bob)) == 1
    # A stale copy saved by a later refresh does not undo the claim.
    second.usage_recorded = False
    async_to_sync(services.refresh)(second)
    async_to_sync(tracker.track_once)()
    assert Batch.objects.get(pk=batch.pk).usage_recorded and len(finished_rows(team, bob)) == 1
