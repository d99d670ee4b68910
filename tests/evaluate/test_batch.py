"""The grid as a provider batch: the playground's views on the live server call the local API's files and batches
endpoints over HTTP; results come back into the cells by custom_id."""

import time

import httpx
import pytest

from playground.connections.models import Connection
from playground.evaluate import batch as batch_run
from playground.evaluate.models import Cell, Evaluation
from playground.upstream.errors import UpstreamError
from tests.evaluate.conftest import blank_run, latest_cells, make_evaluation, statuses

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]
HTMX = {"HX-Request": "true"}
SAY = "{{question}} [say:Answer to {{question}}]"


def wait_joined(http: httpx.Client, evaluation: Evaluation, timeout: float = 90) -> None:
    """Poll the status fragment as the page does, until the results are joined (the page is told to reload)."""
    deadline = time.monotonic() + timeout
    while True:
        response = http.get(f"/evaluate/{evaluation.pk}/batch/status/", headers=HTMX)
        if response.status_code == 204 and response.headers.get("HX-Refresh") == "true":
            return
        assert response.status_code == 200, response.text
        if time.monotonic() > deadline:
            raise AssertionError(f"the batch never finished: {response.text}")
        time.sleep(0.3)


def test_the_grid_runs_as_a_batch_and_results_join_back_by_custom_id(alice_http, alice, catalog):
    evaluation = make_evaluation(alice, rows=4, variants=2, user=SAY)
    variant_b = evaluation.variants.get(position=1)
    variant_b.model = "local/verified"  # answers 403: its requests fail inside the batch
    variant_b.graders = {"contains": "answer"}
    variant_b.save()
    response = alice_http.post(f"/evaluate/{evaluation.pk}/batch/")
    assert response.status_code == 302, response.text
    evaluation.refresh_from_db()
    assert evaluation.batch.request_count == 8
    assert sorted(evaluation.batch_map)[:2] == ["row-1-variant-A", "row-1-variant-B"]
    page = alice_http.get(f"/evaluate/{evaluation.pk}/").text
    assert 'id="batch-status"' in page and "every 2s" in page
    # The batch is a run of its own from the start, its cells queued until the results come back.
    run = evaluation.runs.get()
    assert (run.number, run.source, run.status, run.batch, run.started_by) == (
        1,
        "batch",
        "running",
        evaluation.batch,
        alice,
    )
    assert statuses(evaluation) == {"queued": 8}

    wait_joined(alice_http, evaluation)
    evaluation.refresh_from_db()
    assert evaluation.batch.status == "completed" and evaluation.batch_joined
    assert statuses(evaluation) == {"done": 4, "error": 4}
    run.refresh_from_db()
    assert run.status == "done" and run.ended is not None and run.wall_ms > 0
    for cell in latest_cells(evaluation).select_related("case", "variant"):
        assert cell.source == "batch"
        if cell.variant.label == "A":
            assert cell.output == f"Answer to {cell.case.values['question']}"
            assert cell.completion_tokens > 0 and cell.runs == 1
        else:
            assert cell.status == "error" and cell.error and cell.output == ""
    # Joined once: a later status poll changes nothing.
    alice_http.get(f"/evaluate/{evaluation.pk}/batch/status/")
    assert latest_cells(evaluation).filter(runs=2).count() == 0


def test_a_batch_can_be_cancelled(alice_http, alice, catalog):
    evaluation = make_evaluation(alice, rows=80, variants=1, user="write 1500 words about {{question}}")
    assert alice_http.post(f"/evaluate/{evaluation.pk}/batch/").status_code == 302
    assert alice_http.post(f"/evaluate/{evaluation.pk}/batch/cancel/").status_code == 302
    evaluation.refresh_from_db()
    assert evaluation.batch.status in ("cancelling", "cancelled")
    wait_joined(alice_http, evaluation)
    evaluation.refresh_from_db()
    assert evaluation.batch.status == "cancelled"
    counts = statuses(evaluation)
    # What finished before the cancel is joined; the rest stays as it was.
    assert counts.get("done", 0) < 80 and sum(counts.values()) == 80


def test_a_provider_without_file_upload_is_told_so_in_words(alice_http, alice, live_server, catalog):
    evaluation = make_evaluation(alice, rows=2, user=SAY)
    blank_run(evaluation)
    latest_cells(evaluation).filter(case__position=0).update(status=Cell.DONE, output="kept")
    connection = Connection(owner=alice, name="No files", base_url=f"{live_server.url}/nofiles/v1")
    connection.set_key("sk-anything")
    connection.save()
    Evaluation.objects.filter(pk=evaluation.pk).update(connection=connection)
    page = alice_http.post(f"/evaluate/{evaluation.pk}/batch/")
    assert page.status_code == 200
    assert "This provider does not take file uploads" in page.text
    assert "POST /files answered 404, so the grid cannot run as a batch on this connection." in page.text
    evaluation.refresh_from_db()
    assert evaluation.batch is None
    assert latest_cells(evaluation).get(case__position=0).output == "kept"  # nothing run is lost


def test_cells_that_cannot_be_sent_stop_the_batch_before_anything_is_uploaded(alice_http, alice, catalog):
    evaluation = make_evaluation(alice, rows=2, user="{{question}} {{missing}}")
    page = alice_http.post(f"/evaluate/{evaluation.pk}/batch/")
    assert "Some cells cannot be sent" in page.text
    assert "Skipped: row 1 has no value for {{missing}}." in page.text.replace("&#x27;", "'")
    evaluation.refresh_from_db()
    assert evaluation.batch is None


def test_a_rejected_file_names_the_row_and_variant_of_each_bad_line():
    error = UpstreamError(kind="http", status=400, message="file: line 2: body.model is required (a string)")
    shown = batch_run.explain(error, uploading=False, mapping={"row-1-variant-A": [1, 1], "row-1-variant-B": [1, 2]})
    assert shown["title"] == "The provider rejected the requests file"
    assert shown["problems"] == ["row-1-variant-B (line 2: body.model is required (a string))"]
