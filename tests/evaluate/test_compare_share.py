"""Two runs compared, shared (a link frozen when it is made, read-only, signed out) and exported (CSV and JSONL,
every line naming both runs)."""

import csv
import io
import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from playground.evaluate.models import Comparison, Rating
from playground.sharing.models import Share
from tests.conftest import client_of
from tests.evaluate.conftest import blank_run, make_evaluation
from tests.evaluate.test_runs import fill, two_runs

pytestmark = pytest.mark.django_db


def test_a_comparison_is_shared_frozen_and_read_signed_out_with_its_filters_and_diffs(alice, bob, catalog):
    evaluation = two_runs(alice)
    alice_client = client_of(alice)
    assert 'id="share-comparison"' in alice_client.get(f"/evaluate/{evaluation.pk}/compare/?a=1&b=2").text
    opened = alice_client.post(f"/evaluate/{evaluation.pk}/compare/share/", {"a": "1", "b": "2"})
    kept = Comparison.objects.get()
    assert opened.status_code == 302 and opened.url == reverse(
        "sharing:source", args=["evaluation-comparison", kept.pk]
    )
    again = alice_client.post(f"/evaluate/{evaluation.pk}/compare/share/", {"a": "1", "b": "2"})
    assert again.url == opened.url and Comparison.objects.count() == 1  # one per pair of runs
    assert alice_client.post(f"/evaluate/{evaluation.pk}/compare/share/", {"a": "1", "b": "1"}).status_code == 404
    assert client_of(bob).get(opened.url).status_code == 404
    assert alice_client.post(opened.url, {"visibility": "anyone", "expiry": "1d"}).status_code == 302
    share = Share.objects.for_source(kept).get()
    assert (share.kind, share.title) == ("evaluation-comparison", "Evaluation: Capitals, run 2 vs run 1")
    # Frozen: a later change of run 2's answers does not reach the link.
    fill(evaluation.runs.get(number=2), {(1, "A"): "Changed later"})
    signed_out = Client()
    page = signed_out.get(reverse("sharing:view", args=[share.token])).text
    assert "run 2 vs run 1: 1 improved, 1 regressed, 1 failed" in page and "Changed later" not in page
    assert page.count('class="pair"') == 3 and "Paris, France" in page and "Rome" in page
    assert "removed: </span>Lyon" in page and "added: </span>Nice" in page  # the text diff
    assert 'data-filter="regressed"' in page and "/fork/" not in page and '<form method="post"' not in page
    regressed = signed_out.get(reverse("sharing:view", args=[share.token]) + "?show=regressed").text
    assert regressed.count('class="pair"') == 1 and 'data-row="2"' in regressed
    assert signed_out.get(reverse("sharing:view", args=[share.token]) + "?show=bogus").status_code == 200
    evaluation.delete()  # its comparisons go, and their links with them
    assert not Share.objects.exists()


def test_a_comparison_exports_as_csv_and_jsonl_naming_both_runs(alice, bob, catalog):
    evaluation = two_runs(alice)
    alice_client, base = client_of(alice), f"/evaluate/{evaluation.pk}/compare"
    exported = alice_client.get(f"{base}/export.csv?a=1&b=2")
    assert exported["Content-Disposition"] == 'attachment; filename="Capitals-run-2-vs-1.csv"'
    lines = list(csv.DictReader(io.StringIO(exported.content.decode())))
    assert len(lines) == 3
    assert {(line["run_a"], line["run_b"], line["evaluation"]) for line in lines} == {("1", "2", "Capitals")}
    first = lines[0]
    assert (first["row"], first["outcome"], first["a:output"], first["b:output"]) == (
        "1",
        "improved",
        "Paris",
        "Paris, France",
    )
    assert first["graders"] == "exact: fail → pass" and first["run_a_started"] and first["run_b_started"]
    records = [json.loads(x) for x in alice_client.get(f"{base}/export.jsonl?a=1&b=2").text.splitlines()]
    assert [r["outcome"] for r in records] == ["improved", "regressed", "failed"]
    assert records[0]["run_a"] == 1 and records[0]["run_b"] == 2 and "prompt_versions_b" in records[0]
    assert records[2]["a"]["output"] == "Rome" and records[2]["b"]["status"] != "done"
    assert alice_client.get(f"{base}/export.xml?a=1&b=2").status_code == 404
    assert alice_client.get(f"{base}/export.csv?a=1&b=9").status_code == 404
    assert client_of(bob).get(f"{base}/export.csv?a=1&b=2").status_code == 404


@pytest.mark.parametrize("path", ["export.csv", "export.jsonl"])
def test_a_comparison_export_reads_the_same_number_of_queries_for_3_rows_as_for_30(alice, catalog, path):
    def queries(rows: int) -> int:
        evaluation = make_evaluation(alice, rows=rows, variants=2)
        for _ in range(2):
            run = blank_run(evaluation)
            fill(run, {(row, label): f"answer {row}" for row in range(1, rows + 1) for label in "AB"})
        cell = run.cells.first()
        Rating.objects.create(cell=cell, rater=alice, passed=True, score=4)
        client = client_of(alice)
        with CaptureQueriesContext(connection) as seen:
            assert client.get(f"/evaluate/{evaluation.pk}/compare/{path}?a=1&b=2").status_code == 200
        return len(seen.captured_queries)

    assert queries(3) == queries(30)
