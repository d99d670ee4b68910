"""The longest names people may choose break nobody's page (issue 37, item 4): a team, connection, conversation,
evaluation and share link title at its longest, with no space to wrap at, wraps or is cut with its full text in a
title, at 1440 and 390 px, on every page that shows it; the administration table's buttons stay on the screen."""

import pytest
from django.test import Client
from playwright.sync_api import expect

from playground.chat.models import Conversation
from playground.connections.models import Connection, ensure_local_connection
from playground.evaluate import services as evaluations
from playground.sharing.freeze import freeze
from playground.sharing.models import Share
from playground.teams.models import OWNER, Membership, Team
from tests.browser.conftest import log_in, orm, screenshot
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

# Each at its field's max_length, each unbreakable (the worst case: no space to wrap at), each told apart by its head.
TEAM = "Team" + "W" * 96
OTHER_TEAM = "Crew" + "M" * 96
CONNECTION = "Conn" + "W" * 96
CONVERSATION = "Chat" + "W" * 196
EVALUATION = "Eval" + "W" * 96
LINK = "Link" + "W" * 196
NAMES = [TEAM, OTHER_TEAM, CONNECTION, CONVERSATION, EVALUATION, LINK]
SIZES = {1440: {"width": 1440, "height": 900}, 390: {"width": 390, "height": 844}}

# Every displayed element whose own text holds a part of a name: on the screen (or in a box that scrolls sideways to
# it), and when cut (its content wider than its box, which clips it), the full name in its title or an ancestor's.
# Selects holding a name fit the screen.
CHECK = """
(names) => {
  const width = document.documentElement.clientWidth;
  const problems = [];
  const page = document.scrollingElement.scrollWidth;
  if (page > width) problems.push(`the page is ${page}px wide`);
  const nameIn = (text) => names.find((name) => text.includes(name.slice(0, 12)));
  for (const el of document.querySelectorAll("body *")) {
    if (el.closest("option, script, template, [hidden]")) continue;
    const own = Array.from(el.childNodes).filter((n) => n.nodeType === 3).map((n) => n.textContent).join("");
    const name = el.tagName === "SELECT" ? nameIn(el.textContent) : nameIn(own);
    if (!name) continue;
    const rect = el.getBoundingClientRect();
    if (!rect.width || !rect.height) continue;
    const label = `${el.tagName.toLowerCase()}.${el.className} (${name.slice(0, 4)})`;
    // Off the screen is a fault unless it is inside a box that scrolls sideways (a grid of columns on a phone).
    const scroller = (node) => {
      for (let up = node.parentElement; up && up !== document.body; up = up.parentElement) {
        const overflow = getComputedStyle(up).overflowX;
        if ((overflow === "auto" || overflow === "scroll") && up.scrollWidth > up.clientWidth) return up;
      }
      return null;
    };
    if ((rect.right > width + 1 || rect.left < -1) && !scroller(el)) {
      problems.push(`${label} spans ${rect.left}..${rect.right}px`);
    }
    if (el.tagName === "SELECT") continue;
    const clips = getComputedStyle(el).overflowX !== "visible" || getComputedStyle(el).textOverflow === "ellipsis";
    if (el.scrollWidth > el.clientWidth + 1 && clips) {
      const titled = el.closest("[title]");
      if (!titled || !titled.title.includes(name)) problems.push(`${label} is cut without its full text in a title`);
    } else if (el.scrollWidth > el.clientWidth + 1) {
      problems.push(`${label} overflows its box (${el.scrollWidth} > ${el.clientWidth}px)`);
    }
  }
  return problems;
}
"""


def world(alice, root):
    team = Team.objects.create(name=TEAM)
    other = Team.objects.create(name=OTHER_TEAM)
    for each in (team, other):
        Membership.objects.create(team=each, user=alice, role=OWNER)
    local = ensure_local_connection(alice)
    Connection.objects.create(owner=alice, team=team, name=CONNECTION, base_url="http://127.0.0.1:9/v1")
    Connection.objects.create(owner=alice, name=CONNECTION, base_url="http://127.0.0.1:9/v1")
    conversation = Conversation.objects.create(owner=alice, connection=local, model_id="local/chat", title=CONVERSATION)
    evaluation = evaluations.create(user=alice, title=EVALUATION, connection=local)
    share = Share(owner=alice, title=LINK, titled=True, source=conversation)
    share.save()
    freeze(share)
    return {"team": team.pk, "conversation": conversation.pk, "evaluation": evaluation.pk, "share": share.token}


def problems_on(page, path: str, before=None) -> list[str]:
    page.goto(path)
    expect(page.locator("main")).to_be_visible()
    if before:
        before(page)
    return [f"{path}: {problem}" for problem in page.evaluate(CHECK, NAMES)]


def open_share_menu(page):
    page.locator(".share-menu > summary").click()
    expect(page.locator(".move-to-team select")).to_be_visible()


def open_drawer(page):
    toggle = page.get_by_role("button", name="Show conversations")
    if toggle.is_visible():
        toggle.click()
        expect(page.locator("#conversation-drawer")).to_be_visible()


@pytest.mark.parametrize("width", [1440, 390])
def test_the_longest_names_wrap_or_are_cut_with_their_full_text(browser, live_server, alice, catalog, width):
    root = orm(lambda: type(alice).objects.create_superuser("root", "root@example.com", PASSWORD))
    ids = orm(world, alice, root)
    context = browser.new_context(base_url=live_server.url, viewport=SIZES[width])
    context.set_default_timeout(15_000)
    log_in(context, Client(), alice)
    page = context.new_page()
    problems = []
    problems += problems_on(page, "/teams/")
    problems += problems_on(page, f"/teams/{ids['team']}/")
    problems += problems_on(page, "/connections/")
    problems += problems_on(page, f"/c/{ids['conversation']}/", open_drawer)
    screenshot(page, f"long-names-chat-drawer-{width}")
    problems += problems_on(page, f"/c/{ids['conversation']}/", open_share_menu)
    screenshot(page, f"long-names-chat-menu-{width}")
    problems += problems_on(page, "/evaluate/")
    problems += problems_on(page, f"/evaluate/{ids['evaluation']}/")
    problems += problems_on(page, "/shared/")
    problems += problems_on(page, f"/s/{ids['share']}/")
    screenshot(page, f"long-names-share-{width}")
    context.close()

    context = browser.new_context(base_url=live_server.url, viewport=SIZES[width])
    log_in(context, Client(), root)
    page = context.new_page()
    problems += problems_on(page, "/operators/users/")
    buttons = page.locator("#accounts button")
    for index in range(buttons.count()):
        box = buttons.nth(index).bounding_box()
        if box["x"] + box["width"] > SIZES[width]["width"]:
            problems.append(f"/operators/users/: the {buttons.nth(index).inner_text()} button is off the screen")
    screenshot(page, f"long-names-administration-{width}")
    context.close()
    assert not problems, "\n".join(problems)
