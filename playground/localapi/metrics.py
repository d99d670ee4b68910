"""The local API's batch queue for /metrics: batches waiting or running, by status, read when scraped."""

from django.db.models import Count
from prometheus_client.core import GaugeMetricFamily

from playground.localapi.models import Batch

# Statuses of batches not yet ended (the spec's lifecycle; `in_queue` waits for a worker to claim it).
OPEN = ["validating", "in_queue", "in_progress", "finalizing", "cancelling"]


class BatchQueue:
    def _family(self) -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "playground_local_batches", "Batches of the local API not yet ended, by status.", labels=["status"]
        )

    def describe(self):
        # Registering asks for the names: answered without a query (no database work at startup).
        yield self._family()

    def collect(self):
        counts = dict(Batch.objects.filter(status__in=OPEN).values_list("status").annotate(n=Count("pk")))
        family = self._family()
        for status in OPEN:
            family.add_metric([status], counts.get(status, 0))
        yield family


def register() -> None:
    from playground.lib import metrics

    metrics.register_scrape_collector(BatchQueue())
