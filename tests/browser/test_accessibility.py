"""axe-core (WCAG 2.1 A and AA) on every main page, signed out and signed in, at 1440 and 390 px, in the light and
the dark theme: any violation of any impact fails. The conftest also runs axe on each page a browser test leaves
open; this test is the one that walks them all, with content on them."""

import pytest
from playwright.sync_api import expect

from playground.connections.models import Connection
from playground.evaluate import ratings
from playground.evaluate.models import Evaluation
from playground.teams.models import Membership, Team
from tests.browser.axe import describe, violations
from tests.browser.conftest import orm
from tests.evaluate.test_runs import two_runs
from tests.factories import add_connection

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

WIDTHS = (1440, 390)
THEMES = ("light", "dark")
SIGNED_OUT = ["/accounts/login/", "/accounts/signup/"]
SIGNED_IN = [
    "/",
    "/connections/",
    "/connections/new/",
    "/rerank/",
    "/speech/",
    "/speech/voices/",
    "/batches/",
    "/evaluate/",
    "/teams/",
    "/shared/",
    "/import/",
    "/accounts/password/",
]
PROSE = """() => {
  const main = document.querySelector("main").cloneNode(true);
  main.querySelectorAll("pre, code, textarea, script, template").forEach(node => node.remove());
  return main.textContent;
}"""


def check(page, urls: list[str]) -> list[str]:
    """Each of `urls` at each width and theme; the descriptions of what axe found."""
    problems = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        for url in urls:
            response = page.goto(url)
            assert response.ok, f"{url}: {response.status}"
            # Words for people, not markdown or Python: no raw backtick outside code.
            prose = page.evaluate(PROSE)
            if "`" in prose or "=False" in prose or "=True" in prose:
                problems.append(f"{url}: code spelling in prose: {prose[:2000]}")
            for theme in THEMES:
                page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
                found = violations(page)
                if found:
                    problems.append(describe(found, f"{url} at {width} px, {theme}"))
    return problems


def with_content(page, alice) -> tuple[list[str], list[str]]:
    """Pages with content: a conversation with a finished answer and a link to it, a team alice owns, an
    evaluation, the Local connection's models; the signed-in pages and the shared link (for the signed-out)."""
    page.goto("/")
    box = page.get_by_role("textbox", name="Message")
    box.fill("Write a short list of two planets with **bold** names")
    box.press("Enter")
    page.wait_for_url("**/c/*/")
    expect(page.locator(".message-assistant").last).to_have_attribute("data-status", "complete", timeout=60_000)
    conversation = page.url.rstrip("/").rsplit("/", 1)[1]
    page.goto(f"/shared/conversation/{conversation}/")
    page.get_by_role("button", name="Create link").click()
    link = page.locator("a[href^='/s/']").first.get_attribute("href")
    team = orm(lambda: Team.objects.create(name="Research"))
    orm(Membership.objects.create, team=team, user=alice, role="owner")
    evaluation = orm(Evaluation.objects.create, owner=alice, title="Tone check")
    compared, compare_link = two_runs_compared(page, alice)
    local = orm(lambda: Connection.objects.get(owner=alice).pk)
    hosted = orm(add_connection, alice).pk
    signed_in = [
        f"/c/{conversation}/",
        f"/shared/conversation/{conversation}/",
        f"/code/conversation/{conversation}/",
        f"/connections/{hosted}/",
        f"/catalog/{local}/",
        f"/teams/{team.pk}/",
        f"/teams/{team.pk}/connections/new/",
        f"/teams/{team.pk}/usage/",
        f"/teams/{team.pk}/audit/",
        f"/evaluate/{evaluation.pk}/",
        f"/evaluate/{compared}/compare/?a=1&b=2",
        f"/evaluate/{compared}/runs/2/",
        link,
    ]
    return signed_in, [link, compare_link]


def two_runs_compared(page, alice) -> tuple[int, str]:
    """An evaluation run twice, an answer of run 2 rated, and the link to the two runs compared."""
    evaluation = orm(two_runs, alice)
    cell = orm(lambda: evaluation.runs.get(number=2).cells.first())
    orm(ratings.rate, cell, alice, passed=False, score=2, comment="too short")
    page.goto(f"/evaluate/{evaluation.pk}/compare/?a=1&b=2")
    page.get_by_role("button", name="Share this comparison").click()
    page.get_by_role("button", name="Create link").click()
    return evaluation.pk, page.locator("a[href^='/s/']").first.get_attribute("href")


def test_every_main_page_has_no_axe_violation_signed_out_and_in(browser, live_server, alice_page, alice):
    problems = check(alice_page, ["/"])  # the empty start page
    signed_in, shared = with_content(alice_page, alice)
    problems += check(alice_page, SIGNED_IN + signed_in)
    stranger = browser.new_context(base_url=live_server.url)
    try:
        problems += check(stranger.new_page(), SIGNED_OUT + shared)
    finally:
        stranger.close()
    assert not problems, "\n\n".join(problems)
