"""Rerank in Chromium: results appear ranked with their scores."""

import pytest

from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]

DOCUMENTS = """The Eiffel Tower is in Paris, France.
Bananas are rich in potassium.
Paris is the capital of France and its largest city.
Mount Fuji is the highest mountain in Japan.
The Louvre in Paris is the most visited museum in the world."""


def fill_form(page, query: str, **params: str) -> None:
    """The rerank page with the instructable reranker chosen (its parameter fields appear), filled in."""
    page.goto("/rerank/")
    page.select_option("#id_model", "local/reranker-instruct")
    page.wait_for_selector("[name=instruction]")
    page.fill("#id_query", query)
    page.fill("#id_documents", DOCUMENTS)
    for name, value in params.items():
        page.fill(f"[name={name}]", value)


def test_rerank_results_appear_ranked_with_their_scores(live_server, catalog, alice_page):
    page = alice_page
    fill_form(page, "Paris France capital", top_n="4")
    page.click("#rerank-submit")
    page.wait_for_selector("#ranked-list .ranked-row")
    rows = page.locator("#ranked-list .ranked-row")
    assert rows.count() == 4
    scores = [float(rows.nth(i).get_attribute("data-score")) for i in range(4)]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    assert rows.nth(0).get_attribute("data-index") == "2"
    shown = [rows.nth(i).locator(".score").inner_text() for i in range(4)]
    assert shown == [f"{score:.4f}" for score in scores]
    assert "Paris is the capital of France" in rows.nth(0).inner_text()
    assert "/rerank/runs/" in page.url
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "rerank-light")
    page.emulate_media(color_scheme="dark")
    screenshot(page, "rerank-dark")


def test_rerank_comparison_highlights_rank_changes(live_server, catalog, alice_page):
    page = alice_page
    fill_form(page, "Paris", instruction="museum visited")
    page.click("#rerank-submit")
    page.wait_for_selector("#ranked-list .ranked-row")
    page.select_option("#compare-model", "local/reranker-lite")
    page.click(".result-actions button:has-text('Compare')")
    page.wait_for_selector(".compare-grid")
    assert page.locator(".rank-change").count() == 5
    changes = page.locator(".rank-change").all_inner_texts()
    assert any(text.startswith("↑") for text in changes) and any(text.startswith("↓") for text in changes)
    screenshot(page, "rerank-compare-light")
    page.emulate_media(color_scheme="dark")
    screenshot(page, "rerank-compare-dark")
