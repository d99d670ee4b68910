"""The evaluate flow on a library prompt, in Chromium at 1440 and 390 px: a team's owner and one of its members each
pick the team prompt's version for a variant of their own evaluation, run the grid on the local API, and see
name@vN over each column; every cell records the version it ran with."""

import re

import pytest
from django.core.management import call_command
from django.test import Client
from playwright.sync_api import expect

from playground.connections.models import Connection
from playground.evaluate import services
from playground.evaluate.models import Cell, TestCase
from playground.prompts.drafts import check_draft, save_version
from playground.prompts.models import Prompt
from playground.teams.models import MEMBER, OWNER, Membership, Team
from tests.browser.conftest import log_in, orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]
TEAM_NAME = "Team tone of a rather long name for a narrow phone screen"


def team_prompt(alice, bob):
    call_command("seed_catalog", verbosity=0)
    team = Team.objects.create(name="Acme")
    Membership.objects.create(team=team, user=alice, role=OWNER)
    Membership.objects.create(team=team, user=bob, role=MEMBER)
    prompt = Prompt.objects.create(owner=bob, team=team, name=TEAM_NAME)
    for word in ("draft", "team"):
        draft, errors = check_draft(
            bob, {"template": f"{{{{question}}}} [say:{word} {{{{question}}}}]", "model": "local/chat"}
        )
        assert not errors, errors
        save_version(prompt, draft, bob)
    return prompt


def evaluation_of(owner):
    connection = Connection.objects.get(owner=owner, is_local=True)
    evaluation = services.create(user=owner, title=f"Tone of {owner.username}", connection=connection)
    services.save_prompt(evaluation, system="", user="{{question}} [say:own {{question}}]")
    evaluation.cases.all().delete()
    TestCase.objects.bulk_create(
        [TestCase(evaluation=evaluation, position=i, values={"question": q}) for i, q in enumerate(["Hi", "Yo"])]
    )
    services.add_variant(evaluation)
    return evaluation


def use_team_version(page, evaluation, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"/evaluate/{evaluation.pk}/?view=editor#variants")
    variant_b = page.locator("form.variant[data-variant='B']")
    variant_b.get_by_label("Prompt version").select_option(label=f"{TEAM_NAME}@v2 (Acme)")
    variant_b.get_by_role("button", name="Save B").click()
    expect(page.get_by_text("Variant B saved.")).to_be_visible()

    page.goto(f"/evaluate/{evaluation.pk}/")
    grid = page.locator("table.compact-grid")
    own = evaluation.prompt.name
    expect(grid.locator("th[data-column='A']")).to_contain_text(f"{own}@v2 (latest)")
    expect(grid.locator("th[data-column='B']")).to_contain_text(f"{TEAM_NAME}@v2")
    expect(page.locator("#evaluation[data-socket=open]")).to_have_count(1)
    page.get_by_role("button", name="Run all live").click()
    expect(page.locator("#run-status")).to_have_text(re.compile(r"^Run finished: 4 of 4 cells in \d"), timeout=60_000)
    expect(grid.locator("tr[data-row='1'] .cell").nth(1)).to_contain_text("team Hi")
    expect(grid.locator("tr[data-row='2'] .cell").nth(0)).to_contain_text("own Yo")
    # The page itself never scrolls sideways (the grid scrolls in its own box).
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    screenshot(page, f"evaluate-team-prompt-{width}")


def test_an_owner_and_a_member_run_a_team_prompts_version(browser, live_server, alice, bob):
    prompt = orm(team_prompt, alice, bob)
    version = orm(prompt.latest)
    for user, width in ((alice, 1440), (bob, 390)):
        evaluation = orm(evaluation_of, user)
        context = browser.new_context(base_url=live_server.url)
        context.set_default_timeout(15_000)
        log_in(context, Client(), user)
        use_team_version(context.new_page(), evaluation, width)
        own = orm(evaluation.latest_prompt)
        cells = orm(lambda e=evaluation: list(Cell.objects.filter(run=e.latest_run()).select_related("variant")))
        assert {(c.variant.label, c.version_id) for c in cells} == {("A", own.pk), ("B", version.pk)}
