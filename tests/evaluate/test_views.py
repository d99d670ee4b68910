"""The evaluation pages over Django's test client: prompts and versions, test cases, variants, isolation, export."""

import csv
import io
import json

import pytest
from django.test import Client

from playground.evaluate.models import Cell, Evaluation
from tests.evaluate.conftest import blank_run, make_evaluation

pytestmark = [pytest.mark.django_db, pytest.mark.needs_local_api]


def test_creating_an_evaluation_lists_it_for_its_owner_only(alice_client, alice, bob, catalog):
    page = alice_client.get("/evaluate/")
    assert page.status_code == 200 and "New evaluation" in page.text
    connection = alice.connections.get(is_local=True)
    response = alice_client.post("/evaluate/new/", {"title": "Tone check", "connection": connection.pk})
    evaluation = Evaluation.objects.get(owner=alice)
    assert response.status_code == 302 and response.url == f"/evaluate/{evaluation.pk}/"
    assert "Tone check" in alice_client.get("/evaluate/").text
    assert evaluation.versions().get().template == "{{question}}"
    assert evaluation.variants.get().model  # the connection's first chat model

    bob_client = Client()
    bob_client.force_login(bob)
    assert "Tone check" not in bob_client.get("/evaluate/").text
    # Bob cannot use alice's connection either.
    refused = bob_client.post("/evaluate/new/", {"title": "x", "connection": connection.pk})
    assert refused.status_code == 200 and not Evaluation.objects.filter(owner=bob).exists()


def test_saving_the_prompt_keeps_versions_and_the_diff_shows_the_change(alice_client, alice, catalog):
    evaluation = make_evaluation(alice)
    url = f"/evaluate/{evaluation.pk}/prompt/"
    alice_client.post(url, {"system": "Be brief.", "user": "Capital of {{country}}?"})
    alice_client.post(url, {"system": "Be brief.", "user": "Capital of {{country}}?"})  # unchanged: no new version
    alice_client.post(url, {"system": "Be very brief.", "user": "Capital of {{country}}?"})
    assert [p.number for p in evaluation.versions()] == [1, 2, 3]
    evaluation.refresh_from_db()
    assert evaluation.columns == ["question", "country"]
    page = alice_client.get(f"/evaluate/{evaluation.pk}/?view=editor")
    # The variable is highlighted and flagged: no row has a value for it yet.
    assert '<mark class="var">{{country}}</mark>' in page.text
    assert 'data-variable="country">country · empty in some rows' in page.text
    diff = alice_client.get(f"/evaluate/{evaluation.pk}/diff/?a=2&b=3").text
    assert '<span class="diff-del">- Be brief.</span>' in diff
    assert '<span class="diff-add">+ Be very brief.</span>' in diff
    assert alice_client.get(f"/evaluate/{evaluation.pk}/diff/?a=2&b=9").status_code == 404


def test_an_empty_user_prompt_or_one_over_the_limit_is_refused_by_name(alice_client, alice, catalog):
    evaluation = make_evaluation(alice)
    page = alice_client.post(f"/evaluate/{evaluation.pk}/prompt/", {"system": "", "user": "  "})
    assert "user prompt: write the message each test case sends." in page.text
    page = alice_client.post(f"/evaluate/{evaluation.pk}/prompt/", {"system": "x" * 100_001, "user": "hi"})
    assert "system prompt: at most 100000 characters." in page.text
    assert evaluation.versions().count() == 1


def test_importing_csv_replaces_rows_and_a_ragged_file_changes_nothing(alice_client, alice, catalog):
    evaluation = make_evaluation(alice, rows=2)
    url = f"/evaluate/{evaluation.pk}/cases/import/"
    good = "question,expected\n" + "".join(f"Question {i},Answer {i}\n" for i in range(1, 21))
    response = alice_client.post(url, {"text": good, "mode": "replace"})
    assert response.status_code == 302
    assert evaluation.cases.count() == 20
    assert blank_run(evaluation).cells.count() == 20  # a run makes a cell per row × variant
    assert evaluation.cases.last().values == {"question": "Question 20"}

    ragged = io.BytesIO(b"question,expected\nok,1\ntoo,many,values\n")
    ragged.name = "cases.csv"
    page = alice_client.post(url, {"file": ragged, "mode": "replace"})
    assert page.status_code == 200
    assert "Nothing was saved" in page.text
    assert "row 2: 3 values for 2 columns (question, expected)." in page.text
    assert evaluation.cases.count() == 20  # the earlier rows are still there


def test_importing_jsonl_appends_and_the_row_limit_counts_existing_rows(alice_client, alice, catalog):
    evaluation = make_evaluation(alice, rows=990)
    upload = io.BytesIO("".join(json.dumps({"question": f"n{i}", "topic": "t"}) + "\n" for i in range(5)).encode())
    upload.name = "more.jsonl"
    alice_client.post(f"/evaluate/{evaluation.pk}/cases/import/", {"file": upload, "mode": "append"})
    assert evaluation.cases.count() == 995
    evaluation.refresh_from_db()
    assert evaluation.columns == ["question", "topic"]
    too_many = "".join(json.dumps({"question": str(i)}) + "\n" for i in range(6))
    page = alice_client.post(f"/evaluate/{evaluation.pk}/cases/import/", {"text": too_many, "mode": "append"})
    assert "test cases: at most 1000 rows are allowed (995 + 6 imported)." in page.text
    assert evaluation.cases.count() == 995


def test_rows_typed_in_the_table_are_saved_and_a_row_can_be_added_and_deleted(alice_client, alice, catalog):
    evaluation = make_evaluation(alice, rows=1)
    case = evaluation.cases.get()
    url = f"/evaluate/{evaluation.pk}/cases/"
    alice_client.post(url, {f"case-{case.pk}-question": "Typed", f"case-{case.pk}-expected": "Yes", "add": "1"})
    case.refresh_from_db()
    assert case.values == {"question": "Typed"} and case.expected == "Yes"
    assert evaluation.cases.count() == 2
    page = alice_client.post(url, {f"case-{case.pk}-question": "x" * 20_001})
    assert "row 1, column question: at most 20000 characters (got 20001)." in page.text
    added = evaluation.cases.last()
    alice_client.post(f"/evaluate/{evaluation.pk}/cases/{added.pk}/delete/")
    assert evaluation.cases.count() == 1


def test_variants_take_the_chat_parameter_panel_and_graders_with_errors_by_name(alice_client, alice, catalog):
    evaluation = make_evaluation(alice, variants=1)
    variant = evaluation.variants.get()
    url = f"/evaluate/{evaluation.pk}/variants/{variant.pk}/"
    page = alice_client.get(f"/evaluate/{evaluation.pk}/?view=editor")
    assert f'name="p{variant.pk}-temperature"' in page.text and f'name="p{variant.pk}-max_tokens"' in page.text
    post = {f"v{variant.pk}-model": variant.model, f"v{variant.pk}-prompt": "", f"p{variant.pk}-temperature": "5"}
    page = alice_client.post(url, {**post, f"g{variant.pk}-regex": "("})
    assert "temperature: must be at most 2." in page.text
    assert "regex: not a valid pattern" in page.text
    ok = {**post, f"p{variant.pk}-temperature": "0.2", f"g{variant.pk}-exact": "on", f"g{variant.pk}-max_length": "40"}
    assert alice_client.post(url, ok).status_code == 302
    variant.refresh_from_db()
    assert variant.params == {"temperature": "0.2"}
    assert variant.graders == {"exact": True, "max_length": 40}

    for _ in range(5):
        alice_client.post(f"/evaluate/{evaluation.pk}/variants/add/")
    assert evaluation.variants.count() == 4
    assert sorted(v.label for v in evaluation.variants.all()) == ["A", "B", "C", "D"]
    assert "variants: at most 4 columns are allowed." in alice_client.get(f"/evaluate/{evaluation.pk}/").text


def test_another_users_evaluation_is_a_404_everywhere(bob_client, alice, catalog):
    evaluation = make_evaluation(alice)
    blank_run(evaluation)
    blank_run(evaluation)
    variant, case, cell = evaluation.variants.get(), evaluation.cases.first(), evaluation.cells.first()
    base = f"/evaluate/{evaluation.pk}"
    gets = [f"{base}/", f"{base}/diff/?a=1&b=1", f"{base}/export.csv", f"{base}/export.jsonl", f"{base}/?run=1"]
    gets += [f"{base}/runs/1/", f"{base}/compare/?a=1&b=2", f"{base}/export.csv?run=1"]
    for url in gets:
        assert bob_client.get(url).status_code == 404, url
    for url in (
        f"{base}/prompt/",
        f"{base}/cases/",
        f"{base}/cases/import/",
        f"{base}/cases/{case.pk}/delete/",
        f"{base}/variants/add/",
        f"{base}/variants/{variant.pk}/",
        f"{base}/variants/{variant.pk}/delete/",
        f"{base}/cells/{cell.pk}/rate/",
        f"{base}/batch/",
        f"{base}/batch/cancel/",
        f"{base}/delete/",
    ):
        assert bob_client.post(url, {"user": "x", "verdict": "pass"}).status_code == 404, url
    assert Evaluation.objects.filter(pk=evaluation.pk).exists()


def test_forms_need_the_csrf_token(alice, catalog):
    evaluation = make_evaluation(alice)
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.post(f"/evaluate/{evaluation.pk}/prompt/", {"user": "hi"}).status_code == 403


def test_exports_hold_every_row_and_variant_and_defuse_formulas(alice_client, alice, catalog):
    evaluation = make_evaluation(alice, rows=3, variants=2)
    run = blank_run(evaluation)
    for cell in run.cells.select_related("case"):
        cell.status, cell.output, cell.latency_ms = Cell.DONE, f"={cell.case.values['question']}", 12
        cell.grades = {"exact": {"pass": False, "detail": "differs"}}
        cell.save()
    response = alice_client.get(f"/evaluate/{evaluation.pk}/export.csv")
    assert response["Content-Disposition"] == 'attachment; filename="Capitals-run-1.csv"'
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][:6] == ["evaluation", "run", "run_started", "row", "question", "expected"] and "B:output" in rows[0]
    assert len(rows) == 4 and rows[1][:2] == ["Capitals", "1"] and rows[1][2] == run.started.isoformat()
    assert rows[1][rows[0].index("A:version")] == evaluation.latest_prompt().ref
    assert rows[1][rows[0].index("A:output")] == "'=q1"
    assert rows[1][rows[0].index("B:latency_ms")] == "12"
    lines = alice_client.get(f"/evaluate/{evaluation.pk}/export.jsonl").content.decode().splitlines()
    first = json.loads(lines[0])
    assert len(lines) == 3 and first["variables"] == {"question": "q1"} and first["expected"] == "a1"
    assert first["results"]["B"]["output"] == "=q1" and first["results"]["A"]["passed"] is False
    assert (first["evaluation"], first["run"], first["run_started"]) == ("Capitals", 1, run.started.isoformat())
    assert first["prompt_versions"] == {"A": evaluation.latest_prompt().ref, "B": evaluation.latest_prompt().ref}


def test_the_csv_export_holds_the_judges_verdict_score_and_reason(alice_client, alice, catalog):
    evaluation = make_evaluation(alice, rows=2, variants=2)
    run = blank_run(evaluation)
    cells = list(run.cells.select_related("case", "variant").order_by("case__position", "variant__position"))
    scored = {"pass": True, "score": 5, "detail": "Names the capital, with its country.", "of": "k", "model": "m"}
    failed = {"pass": False, "detail": "Answers =another question.", "of": "k", "model": "m"}
    for cell, verdict in zip(cells[:2], (scored, failed), strict=True):
        cell.status, cell.output, cell.grades = Cell.DONE, "Paris", {"judge": verdict}
        cell.save()
    rows = list(csv.reader(io.StringIO(alice_client.get(f"/evaluate/{evaluation.pk}/export.csv").content.decode())))
    header, first, second = rows[0], rows[1], rows[2]
    for label in "AB":
        assert {f"{label}:judge_pass", f"{label}:judge_score", f"{label}:judge_reason"} <= set(header)
    assert first[header.index("A:judge_score")] == "5" and first[header.index("A:judge_pass")] == "True"
    assert first[header.index("A:judge_reason")] == "Names the capital, with its country."
    assert first[header.index("B:judge_score")] == "" and first[header.index("B:judge_pass")] == "False"
    assert first[header.index("B:judge_reason")] == "Answers =another question."
    assert second[header.index("A:judge_reason")] == "" and second[header.index("A:judge_pass")] == ""
