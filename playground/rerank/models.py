from django.conf import settings
from django.db import models
from django.shortcuts import get_object_or_404

from playground.sharing.models import share_links


class RerankRunQuerySet(models.QuerySet):
    def for_user(self, user):
        return self.filter(owner=user)


class RerankRun(models.Model):
    """One rerank call: its inputs (so it can be reopened and rerun) and what the provider answered."""

    shares = share_links()  # its share links: deleting it deletes them
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rerank_runs")
    connection = models.ForeignKey(
        "connections.Connection", null=True, on_delete=models.SET_NULL, related_name="rerank_runs"
    )
    model = models.CharField(max_length=200)
    query = models.TextField()
    documents = models.JSONField(default=list)
    params = models.JSONField(default=dict)
    results = models.JSONField(default=list)
    meta = models.JSONField(default=dict)
    trace_id = models.CharField(max_length=200, blank=True)
    # The run this one was compared against (same query and documents, another model).
    compared_to = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created = models.DateTimeField(auto_now_add=True)

    objects = RerankRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"{self.model}: {self.query[:40]}"

    def ranked(self) -> list[dict]:
        """The results with their rank and the document text (the playground has the inputs even when the
        provider did not return them)."""
        rows = []
        for rank, item in enumerate(self.results, start=1):
            index = item.get("index")
            document = item.get("document")
            text = document.get("text") if isinstance(document, dict) else None
            if text is None and isinstance(index, int) and 0 <= index < len(self.documents):
                text = self.documents[index]
            score = float(item.get("relevance_score") or 0)
            rows.append(
                {
                    "rank": rank,
                    "index": index,
                    "score": score,
                    "percent": round(max(0.0, min(score, 1.0)) * 100, 1),
                    "text": text or "",
                    "returned": isinstance(document, dict),
                }
            )
        return rows

    @property
    def tokens(self) -> dict:
        return self.meta.get("tokens") or {}

    @property
    def billed_units(self) -> dict:
        return self.meta.get("billed_units") or {}


def get_run(request, pk) -> RerankRun:
    """The user's run, or 404 for anyone else's."""
    return get_object_or_404(RerankRun.objects.for_user(request.user), pk=pk)
