"""The evaluation flow in Chromium: template, a 20-row CSV, two variants, a live run, grading, export."""

import csv
import io
import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from playground.evaluate.models import Evaluation, Rating
from tests.browser.conftest import orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def test_import_twenty_rows_run_two_variants_live_grade_and_export(alice_page, alice, live_server, tmp_path):
    orm(call_command, "seed_catalog", verbosity=0)
    rows = ["question,expected"] + [f"Question {n},Answer to Question {n}" for n in range(1, 21)]
    upload = tmp_path / "cases.csv"
    upload.write_text("\n".join(rows) + "\n")
    page = alice_page
    page.goto("/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Evaluate").click()
    page.get_by_label("Title").fill("Browser flow")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", name="Browser flow", exact=True)).to_be_visible()
    page.get_by_role("link", name="Editor", exact=True).click()  # the compact grid is the default view
    page.wait_for_load_state("domcontentloaded")  # the page's scripts listen before we type

    # The template: variables are highlighted and listed as they are typed; a new one is flagged.
    user = page.get_by_label("User prompt")
    user.fill("{{question}} {{tone}} [say:Answer to {{question}}]")
    expect(page.locator('[data-preview-for="id_user"] mark.var')).to_have_count(3)
    expect(page.locator('#variable-list [data-variable="tone"]')).to_have_class("is-missing")
    user.fill("{{question}} [say:Answer to {{question}}]")
    expect(page.locator("#variable-list li")).to_have_count(1)
    page.get_by_role("button", name="Save as new version").click()
    expect(page.get_by_text("Prompt saved as Browser flow@v2.")).to_be_visible()

    page.get_by_text("Import or paste CSV / JSONL").click()
    page.get_by_label("Or a file (.csv, .jsonl)").set_input_files(str(upload))
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.get_by_text("Imported 20 rows.")).to_be_visible()
    expect(page.locator(".cases-table tbody tr")).to_have_count(20)

    page.get_by_role("button", name="Add a variant").click()
    variant_a = page.locator("form.variant[data-variant=A]")
    variant_a.get_by_text("Graders").click()
    variant_a.get_by_label("Exact match").check()
    variant_a.get_by_role("button", name="Save A").click()
    expect(page.get_by_text("Variant A saved.")).to_be_visible()
    expect(page.locator("form.variant")).to_have_count(2)

    expect(page.locator("#evaluation[data-socket=open]")).to_have_count(1)
    page.get_by_role("button", name="Run all live").click()
    status = page.locator("#run-status")
    expect(status).to_contain_text("Running 40 cells, 4 at a time")
    expect(status).to_have_text(re.compile(r"^Run finished: 40 of 40 cells in [\d.]+ m?s\.$"), timeout=60_000)
    expect(page.locator("#evaluation[data-run-state=ended]")).to_have_count(1)  # the grid shows the new run

    expect(page.locator('.grid-table .cell[data-status="done"]')).to_have_count(40)
    first = page.locator(".grid-table tbody tr").first.locator(".cell").first
    expect(first.locator(".rendered")).to_have_text("Answer to Question 1")
    expect(first.locator('[data-grade="exact"]')).to_have_attribute("data-pass", "1")
    expect(page.locator('[data-summary="A"] .score')).to_have_text("100%")
    expect(page.locator('[data-summary="B"] .score')).to_have_text("—")

    # Rate by hand, with a comment; the raw toggle shows the text as the model wrote it.
    first.get_by_label("Your verdict on this answer").select_option("pass")
    first.get_by_label("Your comment").fill("spot on")
    first.get_by_role("button", name="Rate").click()
    expect(page.locator(".grid-table .cell").first.get_by_role("button", name="Update")).to_be_visible()
    cell = page.locator(".grid-table .cell").first
    cell.get_by_role("button", name="raw").click()
    expect(cell.locator("pre.raw")).to_be_visible()
    expect(cell.locator(".rendered")).to_be_hidden()
    evaluation = orm(Evaluation.objects.get, owner=alice)
    assert orm(Rating.objects.filter(cell__run__evaluation=evaluation, passed=True, comment="spot on").count) == 1

    with page.expect_download() as download:
        page.get_by_role("link", name="Export CSV").click()
    exported = list(csv.reader(io.StringIO(download.value.path().read_text())))
    assert len(exported) == 21 and exported[1][exported[0].index("A:output")] == "Answer to Question 1"

    page.locator("#grid").scroll_into_view_if_needed()
    screenshot(page, "evaluate-grid-1280")
    page.locator("#variants").scroll_into_view_if_needed()
    screenshot(page, "evaluate-variants-1280")
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "evaluate-top-1280")
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    screenshot(page, "evaluate-top-390")
    page.locator("#grid").scroll_into_view_if_needed()
    screenshot(page, "evaluate-grid-390")
    page.locator("#run").scroll_into_view_if_needed()
    screenshot(page, "evaluate-run-390")
    overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    wide = page.evaluate(
        "() => Array.from(document.querySelectorAll('body *')).filter(e => !e.closest('.table-scroll') && e.getBoundingClientRect().right > "
        "document.documentElement.clientWidth + 1).slice(0, 8).map(e => e.tagName + '.' + e.className + '#' + e.id)"
    )
    assert overflow <= 1, wide
