"""Kept runs in Chromium, at 1440 and 390 px: an evaluation run twice (its template changed between), the runs list,
the two runs compared (summary, a filter, a text diff), a person's rating of a cell, and the run's page with the
agreement of its grader and people."""

import re
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from playground.connections.models import Connection
from playground.evaluate import services
from playground.evaluate.models import Rating, TestCase
from tests.browser.conftest import ARTIFACTS, orm

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
# (question, run 1's answer, run 2's answer, expected): unchanged, improved, regressed, changed.
ROWS = [
    ("Capital of France?", "Paris", "Paris", "Paris"),
    ("Capital of Germany?", "Bonn", "Berlin", "Berlin"),
    ("Capital of Italy?", "Rome", "Milan", "Rome"),
    ("Capital of Japan?", "Kyoto", "Osaka", "Tokyo"),
]


def make_evaluation(owner):
    call_command("seed_catalog", verbosity=0)
    connection = Connection.objects.get(owner=owner, is_local=True)
    evaluation = services.create(user=owner, title="Capitals", connection=connection)
    services.new_version(evaluation, system="", user="{{question}} [say:{{first}}]")
    evaluation.cases.all().delete()
    TestCase.objects.bulk_create(
        [
            TestCase(evaluation=evaluation, position=i, values={"question": q, "first": a, "second": b}, expected=e)
            for i, (q, a, b, e) in enumerate(ROWS)
        ]
    )
    evaluation.columns = ["question", "first", "second"]
    evaluation.save()
    evaluation.variants.update(graders={"exact": True})
    return evaluation


def run_all(page, runs: int):
    page.get_by_role("button", name="Run all live").click()
    expect(page.locator("#run-status")).to_have_text(re.compile(r"^Run finished: 4 of 4 cells"), timeout=60_000)
    expect(page.locator("#evaluation[data-run-state=ended]")).to_have_count(1)
    expect(page.locator("#runs tbody tr")).to_have_count(runs)
    # Only the run buttons carry data-run: a click anywhere else must not start a run.
    assert page.locator("[data-run]:not(button)").count() == 0


@pytest.mark.parametrize("width", [1440, 390])
def test_run_twice_compare_the_runs_and_rate_a_cell(alice_page, alice, live_server, width):
    evaluation = orm(make_evaluation, alice)
    page = alice_page
    page.set_viewport_size({"width": width, "height": 900 if width > 600 else 844})
    page.goto(f"/evaluate/{evaluation.pk}/")
    expect(page.locator("#no-runs")).to_contain_text("No runs yet")
    expect(page.locator("#evaluation[data-socket=open]")).to_have_count(1)
    run_all(page, 1)
    orm(services.new_version, evaluation, system="", user="{{question}} [say:{{second}}]")
    run_all(page, 2)

    runs = page.locator("#runs")
    latest = runs.locator("tr[data-run-number='2']")
    expect(latest).to_contain_text("latest")
    expect(latest).to_contain_text("alice")
    expect(latest.locator("[data-rate='exact']")).to_contain_text("exact 50% (2/4)")
    expect(runs.locator("tr[data-run-number='1'] [data-rate='exact']")).to_contain_text("exact 50% (2/4)")
    if width > 600:
        runs.scroll_into_view_if_needed()
        runs.screenshot(path=str(SCREENSHOTS / "evaluate-runs.png"))

    # The earlier run's grid on request.
    runs.get_by_role("link", name="Run 1", exact=True).click()
    expect(page.locator("#earlier-run")).to_contain_text("Showing run 1")
    expect(page.locator(".compact-grid tr[data-row='2'] .cell .rendered").first).to_have_text("Bonn")
    page.get_by_role("link", name="Show the latest run (2)").click()
    expect(page.locator(".compact-grid tr[data-row='2'] .cell .rendered").first).to_have_text("Berlin")

    # Compare run 2 with run 1.
    page.locator("#runs").get_by_role("button", name="Compare").click()
    summary = page.locator("#compare-summary")
    expect(summary).to_have_text("run 2 vs run 1: 1 improved, 1 regressed, 1 changed, 1 unchanged")
    expect(page.locator("#grader-deltas [data-grader='exact'] [data-delta]")).to_have_text("+0 pts")
    pair = page.locator(".pair[data-row='3']")
    expect(pair.locator(".outcome")).to_have_text("regressed")
    pair.get_by_text("Text diff").click()
    expect(pair.locator(".diff-del")).to_contain_text("Rome")
    expect(pair.locator(".diff-add")).to_contain_text("Milan")
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(SCREENSHOTS / ("evaluate-compare.png" if width > 600 else "evaluate-compare-phone.png")))
    page.get_by_role("link", name="regressed (1)").click()
    expect(page.locator(".pair")).to_have_count(1)
    expect(page.locator(".pair")).to_have_attribute("data-row", "3")
    overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1

    # Rate a cell of the latest run: open it, then a verdict, a score and a comment.
    page.goto(f"/evaluate/{evaluation.pk}/")
    answer = page.locator(".compact-grid tr[data-row='3'] td.answer").first
    answer.scroll_into_view_if_needed()
    answer.click(position={"x": 5, "y": 5})
    expect(answer).to_have_class(re.compile(r"\bis-expanded\b"))
    answer.get_by_label("Your verdict on this answer").select_option("fail")
    answer.get_by_label("Your score from 1 to 5").select_option("2")
    answer.get_by_label("Your comment").fill("Milan is not the capital")
    answer.get_by_role("button", name="Rate").click()
    expect(answer.get_by_role("button", name="Update")).to_be_visible()
    expect(answer.get_by_text(re.compile("rated .* ago"))).to_be_visible()
    rating = orm(Rating.objects.select_related("cell__run").get, rater=alice)
    assert (rating.passed, rating.score, rating.comment, rating.cell.run.number) == (
        False,
        2,
        "Milan is not the capital",
        2,
    )
    if width > 600:
        answer.screenshot(path=str(SCREENSHOTS / "evaluate-rate.png"))
    page.screenshot(path=str(ARTIFACTS / f"evaluate-runs-page-{width}.png"), full_page=True)

    # The run's page: the grader against people.
    page.goto(f"/evaluate/{evaluation.pk}/runs/2/")
    row = page.locator("[data-agreement='exact']")
    expect(row).to_contain_text("100%")  # the grader failed it and so did alice
    expect(row.locator("td").first).to_have_text("1")
    expect(row).to_contain_text("undefined")  # one verdict throughout: kappa is 0/0
    page.screenshot(path=str(SCREENSHOTS / ("evaluate-run.png" if width > 600 else "evaluate-run-phone.png")))
    overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1
