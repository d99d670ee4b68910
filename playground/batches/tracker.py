"""The batch tracker: follows the batches on team connections until they end, so their usage is filed when they
finish whether or not anyone looks at the batches page.

One service per server process (playground/lib/detached.py). Every pass refreshes each batch on a team connection
whose usage is not filed yet; `services.record_usage` claims the filing in the database, so a page refresh and
the trackers of several processes file a batch's usage exactly once.
"""

import asyncio
import logging

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections

from playground.batches import services
from playground.batches.models import Batch
from playground.upstream.errors import UpstreamError

log = logging.getLogger(__name__)


def interval() -> float:
    return settings.BATCH_TRACK_SECONDS


@sync_to_async
def _pending() -> list[Batch]:
    rows = Batch.objects.filter(usage_recorded=False, copy__isnull=True, connection__team__isnull=False)
    return list(rows.select_related("connection").order_by("pk")[:200])


async def track_once() -> int:
    """One pass; returns how many batches it saw finish (or filed after an earlier failure)."""
    filed = 0
    for batch in await _pending():
        try:
            if not batch.is_terminal:
                await services.refresh(batch)  # files the usage when the batch has just ended
            else:
                await services.record_usage(batch)
        except UpstreamError as error:
            log.info("batch %s: the provider did not answer (%s); next pass", batch.pk, error.message)
            continue
        filed += batch.usage_recorded
    return filed


async def run_forever() -> None:
    while True:
        await asyncio.sleep(interval())
        try:
            await track_once()
        except Exception:
            log.exception("batch tracker pass failed")
            await sync_to_async(close_old_connections)()
