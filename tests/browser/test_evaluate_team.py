"""Experiments end to end in Chromium, at 1440 and 390 px, on the local API and on the fake OpenAI-style provider:
alice imports a dataset, makes a team evaluation of it, runs it twice and compares the runs; bob, on her team,
rates an answer of the latest run beside hers; alice shares the comparison and a signed-out reader opens it.
No page scrolls sideways at 390 px. The local API's screenshots go to docs/screenshots."""

import re
from pathlib import Path

import pytest
from django.test import Client
from playwright.sync_api import expect

from playground.connections.models import Connection
from playground.evaluate import ratings, services
from playground.evaluate.models import Evaluation, Rating
from playground.sharing.models import Share
from playground.teams.models import MEMBER, OWNER, Membership, Team
from tests.browser.conftest import log_in, orm, screenshot
from tests.fakeprovider import server as fake
from tests.providers.conftest import fake_provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
SIZES = {1440: {"width": 1440, "height": 900}, 390: {"width": 390, "height": 844}}
# Run 1 asks for `first`, run 2 for `second`; the grader looks for the expected answer: unchanged, improved,
# regressed, changed.
CSV = (
    b"question,first,second,expected\n"
    b"Capital of France?,Paris,Paris,Paris\n"
    b"Capital of Germany?,Bonn,Berlin,Berlin\n"
    b"Capital of Italy?,Rome,Milan,Rome\n"
    b"Capital of Japan?,Kyoto,Osaka,Tokyo\n"
)
SUMMARY = "run 2 vs run 1: 1 improved, 1 regressed, 1 changed, 1 unchanged"


def page_for(browser, live_server, user, width):
    context = browser.new_context(base_url=live_server.url, viewport=SIZES[width])
    context.set_default_timeout(20_000)
    if user is not None:
        log_in(context, Client(), user)
    return context.new_page()


def no_sideways_scroll(page):
    overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1, f"{page.url} scrolls sideways by {overflow}px"


def shot(page, name: str, width: int, provider: str):
    """The local API's screenshots are the docs' (phone ones end in -phone); every one goes to the artifacts."""
    screenshot(page, f"{name}-{provider}-{width}")
    if provider == "local":
        page.screenshot(path=str(SCREENSHOTS / (f"{name}.png" if width > 600 else f"{name}-phone.png")))


def team_of(alice, bob):
    team = Team.objects.create(name="Acme")
    Membership.objects.create(team=team, user=alice, role=OWNER)
    Membership.objects.create(team=team, user=bob, role=MEMBER)
    return team


def set_up(evaluation_pk, model, column):
    evaluation = Evaluation.objects.get(pk=evaluation_pk)
    services.new_version(evaluation, system="", user="{{question}} [say:{{" + column + "}}]")
    evaluation.variants.update(model=model, graders={"contains": ""})


def run_all(page, runs: int):
    page.get_by_role("button", name="Run all live").click()
    expect(page.locator("#run-status")).to_have_text(re.compile(r"^Run finished: 4 of 4 cells"), timeout=60_000)
    expect(page.locator("#evaluation[data-run-state=ended]")).to_have_count(1)
    expect(page.locator("#runs tbody tr")).to_have_count(runs)


@pytest.mark.parametrize("width", [1440, 390])
@pytest.mark.parametrize("provider", [pytest.param("local", marks=pytest.mark.needs_local_api), "fake"])
def test_dataset_to_shared_comparison_with_a_second_rater(
    browser, live_server, alice, bob, catalog, request, provider, width
):
    orm(team_of, alice, bob)
    if provider == "fake":
        connection = orm(fake_provider, alice, request.getfixturevalue("fake_openai")).connection
        model = fake.CHAT_MODEL
    else:
        connection = orm(Connection.objects.get, owner=alice, is_local=True)
        model = "local/chat"
    page = page_for(browser, live_server, alice, width)

    # A dataset, imported.
    page.goto("/datasets/")
    page.get_by_label("File (.csv or .jsonl)").set_input_files(
        {"name": "capitals.csv", "mimeType": "text/csv", "buffer": CSV}
    )
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.locator("#dataset-title")).to_contain_text("capitals")

    # A team evaluation whose test cases are the dataset's rows.
    page.goto("/evaluate/")
    page.get_by_label("Title").fill("Capitals")
    page.get_by_label("Connection").select_option(str(connection.pk))
    page.get_by_label("Shared with").select_option(label="Acme")
    page.get_by_role("button", name="Create").click()
    expect(page.locator("h1")).to_have_text("Capitals")
    evaluation = orm(Evaluation.objects.get, title="Capitals")
    assert evaluation.team_id is not None
    orm(set_up, evaluation.pk, model, "first")
    page.goto(f"/evaluate/{evaluation.pk}/?view=editor#cases")
    page.locator("#use-dataset summary").click()
    page.get_by_label("Dataset version (its rows replace the test cases)").select_option(label="capitals v1 · 4 rows")
    page.get_by_role("button", name="Use these rows").click()
    expect(page.locator("#dataset-ref")).to_contain_text("v1")

    # Run twice, the template changed between; compare.
    page.goto(f"/evaluate/{evaluation.pk}/")
    expect(page.locator("#evaluation[data-socket=open]")).to_have_count(1)
    run_all(page, 1)
    orm(set_up, evaluation.pk, model, "second")
    run_all(page, 2)
    page.locator("#runs").get_by_role("button", name="Compare").click()
    expect(page.locator("#compare-summary")).to_have_text(SUMMARY)
    regressed = page.locator(".pair[data-row='3']")
    expect(regressed.locator(".outcome")).to_have_text("regressed")
    regressed.get_by_text("Text diff").click()
    expect(regressed.locator(".diff-add")).to_contain_text("Milan")
    no_sideways_scroll(page)
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "evaluate-team-compare", width, provider)

    # Alice's rating (by the ORM), then bob's in his own browser: each kept, with who.
    run = orm(lambda: evaluation.runs.get(number=2))
    cell = orm(lambda: run.cells.get(case__position=2))
    orm(ratings.rate, cell, alice, passed=True, score=4, comment="Milan is fine")
    bob_page = page_for(browser, live_server, bob, width)
    bob_page.goto(f"/evaluate/{evaluation.pk}/")
    expect(bob_page.locator("#member-note")).to_contain_text("alice, its owner, runs this evaluation")
    expect(bob_page.get_by_role("button", name="Run all live")).to_have_count(0)
    answer = bob_page.locator(".compact-grid tr[data-row='3'] td.answer").first
    answer.scroll_into_view_if_needed()
    answer.click(position={"x": 5, "y": 5})
    expect(answer.locator("[data-rating-by='alice']")).to_contain_text("Milan is fine")
    answer.get_by_label("Your verdict on this answer").select_option("fail")
    answer.get_by_label("Your score from 1 to 5").select_option("2")
    answer.get_by_label("Your comment").fill("Milan is not the capital")
    answer.get_by_role("button", name="Rate").click()
    expect(answer.get_by_role("button", name="Update")).to_be_visible()
    no_sideways_scroll(bob_page)
    kept = orm(lambda: sorted(Rating.objects.filter(cell=cell).values_list("rater__username", "passed", "score")))
    assert kept == [("alice", True, 4), ("bob", False, 2)]
    bob_page.goto(f"/evaluate/{evaluation.pk}/runs/2/")
    expect(bob_page.locator("tr[data-rating-row='3-A']")).to_have_count(2)
    expect(bob_page.locator("#raters")).to_contain_text("alice: 1 · bob: 1")
    expect(bob_page.locator("[data-agreement='contains'] td").first).to_have_text("2")
    no_sideways_scroll(bob_page)
    bob_page.evaluate("window.scrollTo(0, document.getElementById('agreement').offsetTop - 60)")
    shot(bob_page, "evaluate-team-run", width, provider)

    # Alice shares the comparison; a reader who is signed out opens it.
    page.get_by_role("button", name="Share this comparison").click()
    expect(page.locator("h1")).to_contain_text("run 2 vs run 1")
    page.get_by_role("button", name="Create link").click()
    share = orm(lambda: Share.objects.get(kind="evaluation-comparison"))
    reader = page_for(browser, live_server, None, width)
    reader.goto(f"/s/{share.token}/")
    expect(reader.locator("#shared-compare-summary")).to_have_text(SUMMARY)
    expect(reader.locator(".pair")).to_have_count(4)
    pair = reader.locator(".pair[data-row='3']")
    pair.get_by_text("Text diff").click()
    expect(pair.locator(".diff-del")).to_contain_text("Rome")
    no_sideways_scroll(reader)
    reader.evaluate("window.scrollTo(0, 0)")
    shot(reader, "evaluate-shared-compare", width, provider)
    reader.get_by_role("link", name="improved (1)").click()
    expect(reader.locator(".pair")).to_have_count(1)
    expect(reader.locator(".pair")).to_have_attribute("data-row", "2")
    expect(reader.locator("form[method=post]")).to_have_count(0)
