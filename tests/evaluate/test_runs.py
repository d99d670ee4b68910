"""Kept runs: numbered runs with their own cells, the grid of any run, two runs compared case by case, people's
ratings and how far the graders agree with them (percent and Cohen's kappa)."""

import pytest
from django.test import Client

from playground.evaluate import cases, compare, ratings, runs, services, testcases
from playground.evaluate.models import Cell, Rating, Run, TestCase
from tests.evaluate.conftest import blank_run, make_evaluation

pytestmark = pytest.mark.django_db


def fill(run, answers: dict, grades=None):
    """Cells of `run` done with answers[(row, variant label)] and the grades grades[(row, label)] (if any)."""
    for cell in run.cells.select_related("case", "variant"):
        key = (cell.case.position + 1, cell.variant.label)
        if key in answers:
            cell.status, cell.output = Cell.DONE, answers[key]
            cell.grades = (grades or {}).get(key, {})
            cell.save()


def grade(passed: bool, score=None) -> dict:
    found = {"pass": passed, "detail": ""}
    if score is not None:
        found["score"] = score
    return found


# ---------------------------------------------------------------- Cohen's kappa, by hand


def test_kappa_matches_hand_computed_values():
    # 50 items: both pass 20, A pass B fail 5, A fail B pass 10, both fail 15.
    pairs = [(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 10 + [(False, False)] * 15
    found = ratings.cohen_kappa(pairs)
    # po = 35/50 = 0.7; pA = 0.5, pB = 0.6; pe = 0.5·0.6 + 0.5·0.4 = 0.5; kappa = (0.7 − 0.5) / 0.5 = 0.4
    assert (found.n, found.agreed, found.percent) == (50, 35, 70.0)
    assert found.kappa == pytest.approx(0.4)
    # Perfect disagreement with both at 50 %: po = 0, pe = 0.5, kappa = −1.
    assert ratings.cohen_kappa([(True, False), (False, True)]).kappa == pytest.approx(-1)
    # Perfect agreement with both at 50 %: kappa = 1.
    assert ratings.cohen_kappa([(True, True), (False, False)]).kappa == pytest.approx(1)
    # One rater always passes, the other half the time: po = 0.5, pe = 1·0.5 + 0·0.5 = 0.5, kappa = 0.
    assert ratings.cohen_kappa([(True, True), (True, False)]).kappa == pytest.approx(0)


def test_kappa_is_undefined_with_no_items_or_one_same_verdict_throughout():
    empty = ratings.cohen_kappa([])
    assert (empty.n, empty.percent, empty.kappa) == (0, None, None)
    same = ratings.cohen_kappa([(True, True)] * 3)
    assert (same.n, same.percent, same.kappa) == (3, 100.0, None)  # pe = 1: 0/0
    assert ratings.cohen_kappa([(False, False)] * 2).kappa is None


# ---------------------------------------------------------------- outcomes of one cell, run B against run A


def cell(status=Cell.DONE, output="x", **grades) -> Cell:
    return Cell(status=status, output=output, grades=grades)


@pytest.mark.parametrize(
    ("a", "b", "outcome"),
    [
        (cell(exact=grade(False)), cell(exact=grade(True)), compare.IMPROVED),
        (cell(exact=grade(True)), cell(exact=grade(False)), compare.REGRESSED),
        (cell(judge=grade(False, 2)), cell(judge=grade(False, 3)), compare.IMPROVED),  # a score rose
        (cell(judge=grade(True, 5)), cell(judge=grade(True, 4)), compare.REGRESSED),  # a score fell
        (cell(exact=grade(True), json=grade(False)), cell(exact=grade(False), json=grade(True)), compare.CHANGED),
        (cell(output="a", exact=grade(True)), cell(output="b", exact=grade(True)), compare.CHANGED),
        (cell(output="a", exact=grade(True)), cell(output="a", exact=grade(True)), compare.UNCHANGED),
        (cell(exact=grade(True)), cell(status=Cell.ERROR, output=""), compare.FAILED),
        (cell(status=Cell.ERROR, output=""), cell(exact=grade(True)), compare.IMPROVED),  # from no answer to a pass
        (cell(status=Cell.ERROR, output=""), cell(exact=grade(False)), compare.CHANGED),
        (cell(exact=grade(True)), cell(exact=grade(True), regex=grade(False)), compare.UNCHANGED),  # a new grader
    ],
)
def test_each_outcome_follows_the_documented_rule(a, b, outcome):
    assert compare.classify(a, b)[0] == outcome


# ---------------------------------------------------------------- runs kept and compared


def test_a_partial_run_carries_the_other_cells_and_changes_nothing_of_the_run_before(alice, catalog):
    evaluation = make_evaluation(alice, rows=2, variants=2)
    first = blank_run(evaluation)
    fill(first, {(1, "A"): "one", (1, "B"): "two", (2, "A"): "three", (2, "B"): "four"})
    before = sorted(first.cells.values_list("pk", "output", "status"))
    case = evaluation.cases.get(position=1)
    second, queued = runs.begin(evaluation, user=alice, keys={(case.pk, v.pk) for v in evaluation.variants.all()})
    assert (second.number, second.cells_run, len(queued)) == (2, 2, 2)
    assert sorted(second.cells.values_list("output", "status")) == [
        ("", "queued"),
        ("", "queued"),
        ("one", "done"),
        ("two", "done"),
    ]
    assert sorted(first.cells.values_list("pk", "output", "status")) == before
    assert second.variants[0]["prompt_ref"] == evaluation.latest_prompt().ref and second.variants[0]["label"] == "A"


def test_regrading_changes_only_the_latest_run(alice, catalog):
    evaluation = make_evaluation(alice, rows=1)
    first, second = blank_run(evaluation), blank_run(evaluation)
    for run in (first, second):
        fill(run, {(1, "A"): "Paris"}, {(1, "A"): {"exact": grade(False)}})
    variant = evaluation.variants.get()
    variant.graders = {"max_length": 100}
    variant.save()
    services.regrade(evaluation, variant)
    assert first.cells.get().grades == {"exact": grade(False)}
    assert set(second.cells.get().grades) == {"max_length"}
    second.refresh_from_db()
    assert second.variants[0]["graders"] == {"max_length": 100}


def test_comparing_runs_whose_rows_differ_compares_the_shared_ones_and_says_so(alice, catalog):
    evaluation = make_evaluation(alice, rows=2, variants=1)
    first = blank_run(evaluation)
    fill(first, {(1, "A"): "a", (2, "A"): "b"}, {(1, "A"): {"exact": grade(False)}, (2, "A"): {"exact": grade(True)}})
    testcases.add_case(evaluation)
    second = blank_run(evaluation)
    fill(
        second,
        {(1, "A"): "a!", (2, "A"): "b", (3, "A"): "c"},
        {(1, "A"): {"exact": grade(True)}, (2, "A"): {"exact": grade(True)}, (3, "A"): {"exact": grade(True)}},
    )
    result = compare.compare(first, second)
    assert result.summary() == "run 2 vs run 1: 1 improved, 1 unchanged"
    assert (result.shared_rows, result.only_a, result.only_b) == (2, 0, 1)
    (exact,) = result.graders
    assert (exact.a_passed, exact.a_graded, exact.b_passed, exact.b_graded, exact.rate_delta) == (1, 2, 2, 2, 50)


def test_a_row_taken_out_of_the_table_after_a_run_stays_in_that_run(alice_client, alice, catalog):
    """Runs are immutable records: a row deleted from the table, or dropped by an import that replaces the rows,
    leaves the table and the next run, and stays in the runs that answered it (their compare and export)."""
    evaluation = make_evaluation(alice, rows=3, variants=1)
    first = blank_run(evaluation)
    fill(first, {(1, "A"): "one", (2, "A"): "two", (3, "A"): "three"}, {(2, "A"): {"exact": grade(True)}})
    second_row = evaluation.cases.get(position=1)
    assert alice_client.post(f"/evaluate/{evaluation.pk}/cases/{second_row.pk}/delete/").status_code == 302
    parsed = cases.parse("question,expected\nq1,a1\nq9,a9\n", "csv")  # row 3 (q3) is not in it
    testcases.import_cases(evaluation, parsed, append=False)
    assert [c.values["question"] for c in evaluation.cases.all()] == ["q1", "q9"]
    assert sorted(first.cells.values_list("output", flat=True)) == ["one", "three", "two"]
    assert first.cells.get(case=second_row).grades == {"exact": grade(True)}
    never_answered = testcases.add_case(evaluation)
    testcases.remove(evaluation.cases.filter(pk=never_answered.pk))
    assert not TestCase.everything.filter(pk=never_answered.pk).exists()  # nothing kept it: deleted

    second = blank_run(evaluation)
    assert second.cells.count() == 2  # the table's rows only
    fill(second, {(1, "A"): "one", (2, "A"): "nine"})
    result = compare.compare(first, second)
    assert (result.shared_rows, result.only_a, result.only_b) == (1, 2, 1)
    exported = alice_client.get(f"/evaluate/{evaluation.pk}/export.csv?run=1").text
    assert all(answer in exported for answer in ("one", "two", "three")) and "nine" not in exported
    assert "two" not in alice_client.get(f"/evaluate/{evaluation.pk}/export.csv").text  # run 2's


# ---------------------------------------------------------------- the pages


def two_runs(alice):
    evaluation = make_evaluation(alice, rows=3, variants=1)
    first, second = blank_run(evaluation), blank_run(evaluation)
    fill(
        first,
        {(1, "A"): "Paris", (2, "A"): "Lyon", (3, "A"): "Rome"},
        {(1, "A"): {"exact": grade(False)}, (2, "A"): {"exact": grade(True)}, (3, "A"): {"exact": grade(True)}},
    )
    fill(
        second,
        {(1, "A"): "Paris, France", (2, "A"): "Nice"},
        {(1, "A"): {"exact": grade(True)}, (2, "A"): {"exact": grade(False)}},
    )
    return evaluation


def test_the_grid_shows_the_latest_run_and_any_earlier_one_on_request(alice_client, alice, catalog):
    evaluation = two_runs(alice)
    page = alice_client.get(f"/evaluate/{evaluation.pk}/").text
    assert "Paris, France" in page and 'id="earlier-run"' not in page
    assert page.count("data-run-number=") == 2 and 'Run 2</a> <span class="badge">latest</span>' in page
    assert "exact 50%" in page and "exact 67%" in page  # each run's pass rate per grader
    earlier = alice_client.get(f"/evaluate/{evaluation.pk}/?run=1").text
    assert "Showing run 1" in earlier and "Rome" in earlier and "Paris, France" not in earlier
    assert alice_client.get(f"/evaluate/{evaluation.pk}/?run=9").status_code == 404
    assert alice_client.get(f"/evaluate/{evaluation.pk}/?run=x").status_code == 404
    export = alice_client.get(f"/evaluate/{evaluation.pk}/export.jsonl?run=1")
    assert (
        export["Content-Disposition"] == 'attachment; filename="Capitals-run-1.jsonl"' and b'"Rome"' in export.content
    )


def test_the_compare_page_counts_filters_and_diffs(alice_client, alice, catalog):
    evaluation = two_runs(alice)
    page = alice_client.get(f"/evaluate/{evaluation.pk}/compare/?a=1&b=2").text
    assert "run 2 vs run 1: 1 improved, 1 regressed, 1 failed" in page
    assert page.count('class="pair"') == 3 and 'data-grader="exact"' in page
    assert "+0 pts" not in page and "−" in page  # the diff's removed line is marked in words and sign
    assert "removed: </span>Lyon" in page and "added: </span>Nice" in page
    improved = alice_client.get(f"/evaluate/{evaluation.pk}/compare/?a=1&b=2&show=improved").text
    assert improved.count('class="pair"') == 1 and 'data-outcome="improved"' in improved
    default = alice_client.get(f"/evaluate/{evaluation.pk}/compare/").text  # the latest against the one before
    assert "run 2 vs run 1:" in default


def test_bad_comparisons_are_refused_in_words(alice_client, alice, catalog):
    evaluation = make_evaluation(alice, rows=1)
    blank_run(evaluation)
    url = f"/evaluate/{evaluation.pk}/compare/"
    assert "fewer than two runs; run it again first." in alice_client.get(url).text
    blank_run(evaluation)
    assert "compare: choose two different runs." in alice_client.get(url + "?a=1&b=1").text
    assert (
        "run A: this evaluation has no run &#x27;7&#x27;; choose one listed." in alice_client.get(url + "?a=7&b=1").text
    )
    assert "show: choose one of improved, regressed" in alice_client.get(url + "?a=1&b=2&show=worse").text


def test_a_person_rates_a_cell_once_and_edits_it_and_bad_values_get_words(alice_client, alice, catalog):
    evaluation = make_evaluation(alice, rows=1)
    run = blank_run(evaluation)
    fill(run, {(1, "A"): "Paris"})
    target = run.cells.get()
    url = f"/evaluate/{evaluation.pk}/cells/{target.pk}/rate/"
    page = alice_client.post(url, {"verdict": "fail", "score": "2", "comment": "too short"}, HTTP_HX_REQUEST="true")
    assert f'id="cell-{target.pk}"' in page.text and "too short" in page.text and "Update" in page.text
    alice_client.post(url, {"verdict": "pass", "score": "4", "comment": ""})
    rating = Rating.objects.get(cell=target)
    assert (rating.rater, rating.passed, rating.score, rating.comment) == (alice, True, 4, "")
    for bad, words in (
        ({"score": "6"}, "score: a whole number from 1 to 5 (or leave it blank)."),
        ({"score": "0"}, "score: a whole number from 1 to 5 (or leave it blank)."),
        ({"score": "four"}, "score: a whole number from 1 to 5 (or leave it blank)."),
        ({"verdict": "maybe"}, "verdict: choose pass or fail (or leave it blank)."),
        ({"comment": "c" * 1001}, "comment: at most 1000 characters."),
    ):
        assert words in alice_client.post(url, bad, HTTP_HX_REQUEST="true").text
    rating.refresh_from_db()
    assert (rating.passed, rating.score) == (True, 4)  # nothing bad was saved
    alice_client.post(url, {"verdict": "", "score": "", "comment": ""})
    assert not Rating.objects.filter(cell=target).exists()  # an empty rating is taken back


def test_another_user_cannot_rate_and_the_form_needs_the_csrf_token(bob_client, alice, catalog):
    evaluation = make_evaluation(alice, rows=1)
    run = blank_run(evaluation)
    fill(run, {(1, "A"): "Paris"})
    url = f"/evaluate/{evaluation.pk}/cells/{run.cells.get().pk}/rate/"
    assert bob_client.post(url, {"verdict": "pass"}).status_code == 404
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.post(url, {"verdict": "pass"}).status_code == 403
    assert not Rating.objects.exists()


def test_the_run_page_shows_its_snapshot_and_how_graders_agree_with_people(alice_client, alice, catalog):
    evaluation = make_evaluation(alice, rows=4)
    run = blank_run(evaluation)
    verdicts = {1: True, 2: True, 3: False, 4: False}
    fill(
        run,
        {(n, "A"): f"answer {n}" for n in verdicts},
        {(n, "A"): {"exact": grade(verdicts[n])} for n in verdicts},
    )
    people = {1: True, 2: False, 3: False, 4: False}  # alice agrees with the grader on 3 of 4
    for cell_ in run.cells.select_related("case"):
        ratings.rate(cell_, alice, passed=None, score=5 if people[cell_.case.position + 1] else 1, comment="")
    (exact,) = ratings.agreement(run)
    # po = 3/4; grader passes 1/2, alice 1/4: pe = 0.5·0.25 + 0.5·0.75 = 0.5; kappa = 0.25 / 0.5 = 0.5
    assert exact[0] == "exact" and (exact[1].n, exact[1].agreed) == (4, 3)
    assert exact[1].kappa == pytest.approx(0.5)
    page = alice_client.get(f"/evaluate/{evaluation.pk}/runs/{run.number}/").text
    assert 'data-agreement="exact"' in page and "75%" in page and "0.50" in page and "4 ratings" in page
    assert evaluation.latest_prompt().ref in page and "Started" in page
    assert alice_client.get(f"/evaluate/{evaluation.pk}/runs/5/").status_code == 404
    assert Run.objects.filter(evaluation=evaluation).count() == 1


def test_a_run_is_shared_with_its_comparison_to_the_run_before(alice, bob, catalog):
    from django.urls import reverse

    from playground.sharing.models import Share

    alice_client, bob_client = Client(), Client()
    alice_client.force_login(alice)
    bob_client.force_login(bob)
    evaluation = two_runs(alice)
    second = evaluation.runs.get(number=2)
    url = reverse("sharing:source", args=["evaluation-run", second.pk])
    assert url in alice_client.get(f"/evaluate/{evaluation.pk}/runs/2/").text
    assert bob_client.get(url).status_code == 404
    assert bob_client.post(url, {"visibility": "anyone", "expiry": "1d"}).status_code == 404
    assert alice_client.post(url, {"visibility": "anyone", "expiry": "1d"}).status_code == 302
    share = Share.objects.for_source(second).get()
    assert (share.kind, share.title) == ("evaluation-run", "Evaluation: Capitals, run 2")
    page = Client().get(reverse("sharing:view", args=[share.token])).text
    assert "run 2 vs run 1: 1 improved, 1 regressed, 1 failed" in page and "Paris, France" in page
    assert page.count('class="pair"') == 3 and "Rome" in page  # run 1's answer, beside the failed one
    # Deleting the run's evaluation deletes its links.
    evaluation.delete()
    assert not Share.objects.exists()


def test_a_grid_without_rows_starts_no_run_and_keeps_none(alice, catalog):
    from asgiref.sync import async_to_sync

    from playground.evaluate import runner

    evaluation = make_evaluation(alice, rows=0)
    with pytest.raises(services.EvaluationError, match=r"run: no cells to run\."):
        async_to_sync(runner.start)(evaluation, None, 4, user=alice)
    assert not Run.objects.filter(evaluation=evaluation).exists()
