"""Sharing an evaluation in Chromium: the Share button, a new link, the frozen grid at desktop and phone widths."""

import pytest
from playwright.sync_api import expect

from playground.connections.models import ensure_local_connection
from playground.evaluate import services
from playground.evaluate.models import Cell, Evaluation, Run, TestCase, Variant
from tests.browser.conftest import orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def make_evaluation(owner) -> Evaluation:
    evaluation = Evaluation.objects.create(
        owner=owner, title="Capitals", connection=ensure_local_connection(owner), columns=["country"]
    )
    services.new_version(evaluation, system="", user="Capital of {{country}}? One word.")
    variants = [
        Variant.objects.create(evaluation=evaluation, position=0, model="local/chat", params={"temperature": "0.2"}),
        Variant.objects.create(evaluation=evaluation, position=1, model="local/chat-lite"),
    ]
    run = Run.objects.create(evaluation=evaluation, number=1, started_by=owner, status=Run.DONE)
    for n, (country, city) in enumerate([("France", "Paris"), ("Japan", "Tokyo"), ("Peru", "Lima")]):
        case = TestCase.objects.create(evaluation=evaluation, position=n, values={"country": country}, expected=city)
        for variant in variants:
            Cell.objects.create(
                evaluation=evaluation,
                run=run,
                case=case,
                variant=variant,
                status=Cell.DONE,
                output=f"**{city}**",
                grades={"exact": {"pass": variant.position == 0, "detail": ""}},
                latency_ms=640,
            )
    return evaluation


def test_share_an_evaluation_and_open_it(alice, alice_page, browser, live_server):
    page = alice_page
    evaluation = orm(make_evaluation, alice)
    page.goto(f"/evaluate/{evaluation.pk}/")
    screenshot(page, "evaluate-share-button-1280")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "evaluate-share-button-390")
    page.get_by_role("link", name="Share", exact=True).click()
    page.get_by_role("button", name="Create link").click()
    link = page.locator(".share-links a", has_text="Evaluation: Capitals")
    expect(link).to_be_visible()
    href = link.get_attribute("href")

    viewer = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 860})
    anonymous = viewer.new_page()
    refused = []
    anonymous.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    anonymous.goto(href)
    expect(anonymous.locator("h1")).to_have_text("Evaluation: Capitals")
    expect(anonymous.locator("tbody tr")).to_have_count(3)
    expect(anonymous.locator("tbody tr").first.locator("strong", has_text="Paris")).to_have_count(2)
    expect(anonymous.locator('[data-summary="A"]')).to_contain_text("100%")
    expect(anonymous.locator('[data-summary="B"]')).to_contain_text("0%")
    screenshot(anonymous, "sharing-evaluation-1280")
    anonymous.set_viewport_size({"width": 390, "height": 844})
    screenshot(anonymous, "sharing-evaluation-390")
    width = anonymous.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways at 390: {width}px"
    assert not refused, refused
    viewer.close()
