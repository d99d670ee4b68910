"""The compact evaluate grid in Chromium: the default view, rows with an empty value flagged and skipped, cells
that wait their turn shown as queued, the run's total time, answers clamped until opened, sticky headers, arrow
keys between cells, and the model grader's reason per cell."""

import re
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from playground.connections.models import Connection
from playground.evaluate import services
from playground.evaluate.models import TestCase
from tests.browser.conftest import ARTIFACTS, orm

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
LONG = "Good evening in French. " + " ".join(f"Line {n} of a long answer." for n in range(1, 40))
ROWS = [
    ("Good morning", "French", "Bonjour, in French."),
    ("Good night", "German", "Gute Nacht, in German."),
    ("Good evening", "French", LONG),
    ("Good afternoon", "", "Good afternoon."),
]


def make_grid(owner):
    call_command("seed_catalog", verbosity=0)
    connection = Connection.objects.get(owner=owner, is_local=True)
    evaluation = services.create(user=owner, title="Greetings", connection=connection)
    services.new_version(evaluation, system="", user="Translate {{text}} into {{language}}. [say:{{answer}}]")
    evaluation.cases.all().delete()
    TestCase.objects.bulk_create(
        [
            TestCase(evaluation=evaluation, position=i, values={"text": t, "language": lang, "answer": a})
            for i, (t, lang, a) in enumerate(ROWS)
        ]
    )
    evaluation.columns = ["text", "language", "answer"]
    evaluation.save()
    services.add_variant(evaluation)
    first = evaluation.variants.get(position=0)
    first.graders = {"judge": {"rubric": 'Says "French".', "model": "local/chat", "scale": "pass"}}
    first.save()
    return evaluation


def test_the_compact_grid_runs_flags_queues_times_and_navigates(alice_page, alice, live_server):
    evaluation = orm(make_grid, alice)
    page = alice_page
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"/evaluate/{evaluation.pk}/")
    grid = page.locator("table.compact-grid")
    expect(grid).to_be_visible()  # the default view
    expect(page.get_by_role("link", name="Grid")).to_have_attribute("aria-current", "page")
    expect(page.locator("#gaps [data-gap-row='4']")).to_have_text("row 4: language")
    expect(grid.locator("tr[data-row='4'] [data-missing='language']")).to_contain_text("empty")
    expect(page.locator("#evaluation[data-socket=open]")).to_have_count(1)

    page.get_by_role("button", name="Run all live").click()
    status = page.locator("#run-status")
    expect(status).to_have_text(re.compile(r"^Run finished: 8 of 8 cells in \d"), timeout=60_000)
    expect(page.locator("#evaluation[data-run-state=ended]")).to_have_count(1)  # the grid shows the new run
    expect(grid.locator('.cell[data-status="done"]')).to_have_count(6)
    expect(grid.locator('.cell[data-status="skipped"]')).to_have_count(2)
    skipped = grid.locator("tr[data-row='4'] .cell").first
    expect(skipped.locator(".cell-error")).to_have_text("Skipped: row 4 has no value for {{language}}.")
    judge = grid.locator("tr[data-row='2'] .cell").first.locator("[data-judge]")
    expect(judge).to_contain_text("local/chat failed it: The answer does not mention “French”.")
    expect(grid.locator("tr[data-row='1'] .cell").first.locator('[data-grade="judge"]')).to_have_attribute(
        "data-pass", "1"
    )

    # A second run, one cell at a time: every cell shows "queued" until its turn, not the last run's "done".
    page.evaluate(
        """() => {
          window.seen = {};
          const note = () => document.querySelectorAll('.compact-grid .cell').forEach(cell => {
            const badge = cell.querySelector('.cell-head .badge').textContent;
            const list = (window.seen[cell.id] = window.seen[cell.id] || []);
            if (list[list.length - 1] !== badge) { list.push(badge); }
          });
          new MutationObserver(note).observe(document.querySelector('.compact-grid tbody'),
            {subtree: true, childList: true, attributes: true, characterData: true});
        }"""
    )
    page.locator("#concurrency").fill("1")
    page.get_by_role("button", name="Run all live").click()
    expect(status).to_have_text(re.compile(r"^Run finished: 8 of 8 cells in \d"), timeout=60_000)
    expect(page.locator("#evaluation[data-run-state=ended]")).to_have_count(1)  # the grid shows the new run
    seen = page.evaluate("() => window.seen")
    last = grid.locator("tr[data-row='3'] .cell").nth(1).get_attribute("id")
    assert seen[last][0] == "queued" and seen[last][-1] == "done", seen[last]
    assert "done" not in seen[last][: seen[last].index("running")], seen[last]

    # The long answer is clamped to a few lines until a click (or Enter) opens it.
    long_cell = grid.locator("tr[data-row='3'] td.answer").first
    rendered = long_cell.locator(".rendered")
    assert rendered.evaluate("e => e.scrollHeight > e.clientHeight + 20")
    long_cell.click(position={"x": 5, "y": 5})
    expect(long_cell).to_have_class(re.compile(r"\bis-expanded\b"))
    assert rendered.evaluate("e => e.scrollHeight <= e.clientHeight + 2")
    assert grid.locator("thead th").first.evaluate("e => getComputedStyle(e).position") == "sticky"

    # Arrow keys move between cells; Enter opens one.
    first = grid.locator("td.gcell").first
    first.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    focused = page.evaluate(
        "() => [document.activeElement.closest('tr').dataset.row, "
        "Array.from(document.activeElement.parentElement.querySelectorAll('td.gcell'))"
        ".indexOf(document.activeElement)]"
    )
    assert focused == ["2", 2]
    page.keyboard.press("Enter")
    expect(grid.locator("tr[data-row='2'] td.answer").first).to_have_class(re.compile("is-expanded"))
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowUp")
    assert page.evaluate("() => document.activeElement.closest('tr').dataset.row") == "1"

    long_cell.click(position={"x": 5, "y": 5})  # closed again for the picture
    page.evaluate("document.getElementById('runs').scrollIntoView()")  # the runs list, then the grid
    page.screenshot(path=str(SCREENSHOTS / "evaluate-grid.png"), full_page=False)
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    expect(grid).to_be_visible()
    page.locator("#grid").scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOTS / "evaluate-grid-phone.png"), full_page=False)
    overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1


# The element is drawn whole: no ancestor up to its cell clips it (a line clamp cut "empty" to "…" on a phone).
WHOLE = """e => {
  const r = e.getBoundingClientRect();
  for (let a = e.parentElement; a && a.tagName !== 'TD'; a = a.parentElement) {
    const s = getComputedStyle(a);
    if (s.overflowX === 'visible' && s.overflowY === 'visible') continue;
    const b = a.getBoundingClientRect();
    if (r.top < b.top - 0.5 || r.bottom > b.bottom + 0.5 || r.left < b.left - 0.5 || r.right > b.right + 0.5)
      return false;
  }
  return r.width > 0 && r.height > 0;
}"""


@pytest.mark.parametrize("width", [1440, 390])
def test_a_rows_empty_value_is_flagged_in_words_at_every_width(alice_page, alice, live_server, width):
    evaluation = orm(make_grid, alice)
    page = alice_page
    page.set_viewport_size({"width": width, "height": 844})
    page.goto(f"/evaluate/{evaluation.pk}/")
    cell = page.locator("table.compact-grid tr[data-row='4'] td.vars")
    cell.scroll_into_view_if_needed()
    flag = cell.locator("[data-missing='language']")
    expect(flag).to_have_text("language empty")
    assert flag.get_by_text("empty").evaluate(WHOLE), "the empty flag is cut off"
    expect(cell).to_contain_text("Good afternoon")  # the row's other values are still there
    cell.screenshot(path=str(ARTIFACTS / f"evaluate-grid-empty-flag-{width}.png"))


@pytest.mark.parametrize("width", [1440, 390])
def test_the_run_bars_concurrency_is_kept_after_a_reload(alice_page, alice, live_server, width):
    from tests.evaluate.conftest import make_evaluation

    evaluation = orm(make_evaluation, alice, rows=1, user="{{question}} [say:Fine]")
    page = alice_page
    page.set_viewport_size({"width": width, "height": 844})
    page.goto(f"/evaluate/{evaluation.pk}/")
    expect(page.locator("#evaluation[data-socket=open]")).to_have_count(1)
    concurrency = page.get_by_label("Concurrency")
    expect(concurrency).to_have_value("4")
    concurrency.fill("2")
    page.get_by_role("button", name="Run all live").click()
    expect(page.locator("#run-status")).to_have_text(re.compile(r"^Run finished: 1 of 1 cell"), timeout=60_000)
    page.reload()
    expect(page.get_by_label("Concurrency")).to_have_value("2")
    expect(page.get_by_label("Concurrency")).to_be_in_viewport()
