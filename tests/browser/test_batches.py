import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from tests.browser.conftest import orm, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.needs_local_api]


def test_create_a_batch_from_three_prompts_watch_it_complete_and_read_the_results(alice_page, live_server):
    orm(call_command, "seed_catalog", verbosity=0)
    page = alice_page
    page.goto("/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Batches").click()
    expect(page.get_by_role("heading", name="Batches", exact=True)).to_be_visible()
    expect(page.get_by_text("No batches yet")).to_be_visible()

    page.get_by_label("Model").select_option("local/chat")
    page.get_by_label("Prompts", exact=True).fill("What is the capital of France?\nName three primes.\nSay hi to Bob.")
    page.get_by_label("Metadata key").fill("project")
    page.get_by_label("Metadata value").fill("browser-demo")
    page.get_by_role("button", name="Create batch").click()

    expect(page.get_by_role("status").filter(has_text="created with 3 requests")).to_be_visible()
    row = page.locator("#batch-list .batch").first
    # The row polls every 2 s until the batch is over.
    expect(row.get_by_label("Status")).to_have_text("completed", timeout=30_000)
    expect(row.get_by_test_id("counts")).to_have_text("3 of 3 done")
    expect(row.locator("[hx-trigger]")).to_have_count(0)
    expect(row.get_by_text("project=browser-demo")).to_be_visible()
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "batches-light")
    page.get_by_role("button", name="Toggle dark mode").click()
    screenshot(page, "batches-dark")

    row.get_by_role("link", name="Results").click()
    expect(page.get_by_role("heading", name="Results")).to_be_visible()
    rows = page.locator("table.results tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("request-1")
    expect(rows.nth(0)).to_contain_text("What is the capital of France?")
    for index in range(3):
        expect(rows.nth(index).locator(".answer")).not_to_be_empty()
        expect(rows.nth(index).get_by_text("Raw")).to_be_visible()
    rows.nth(0).get_by_text("Raw").click()
    expect(rows.nth(0).locator(".answer-raw")).to_be_visible()
    expect(page.get_by_test_id("summary")).to_contain_text("3 answered")
    screenshot(page, "batch-results-dark")
    page.get_by_role("button", name="Toggle dark mode").click()
    screenshot(page, "batch-results-light")


def test_an_invalid_upload_shows_the_lines_at_fault(alice_page, live_server, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"custom_id": "a"}\nnot json\n')
    page = alice_page
    page.goto("/batches/")
    page.get_by_text("Upload a JSONL file").click()
    expect(page.get_by_label("Prompts", exact=True)).to_be_hidden()
    page.get_by_label("Requests file (.jsonl)").set_input_files(str(bad))
    page.get_by_role("button", name="Create batch").click()
    alert = page.get_by_role("alert").filter(has_text="rejected the requests file")
    expect(alert).to_contain_text("line 1: method must be POST")
    expect(alert).to_contain_text("line 2: invalid JSON")
    screenshot(page, "batches-upload-error")


@pytest.mark.parametrize("width", [1440, 390])
def test_a_batch_from_a_prompt_version_and_rows_of_variables(alice_page, alice, live_server, width):
    from tests.prompts.conftest import make_prompt

    orm(call_command, "seed_catalog", verbosity=0)
    version = orm(lambda: make_prompt(alice, name="summary", template="Summarise {{topic}} in {{n}} words.").latest())
    page = alice_page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/batches/")
    page.get_by_text("A prompt version").click()
    expect(page.get_by_label("Prompts", exact=True)).to_be_hidden()
    page.get_by_label("Prompt version", exact=True).select_option(label="summary@v1 (You)")
    page.get_by_label("Variable rows").fill('topic,n\nrivers,5\n{"bad')
    page.get_by_role("button", name="Create batch").click()
    expect(page.get_by_text("variables, line 3: 1 values for 2 columns.")).to_be_visible()
    page.get_by_label("Variable rows").fill("topic,n\nrivers,5\nlakes,3\n")
    page.get_by_role("button", name="Create batch").click()
    expect(page.get_by_role("status").filter(has_text="created with 2 requests")).to_be_visible()
    row = page.locator("#batch-list .batch").first
    expect(row.locator(f"[data-version='{version.pk}']")).to_have_text("from summary@v1")
    expect(row.get_by_label("Status")).to_have_text("completed", timeout=30_000)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    screenshot(page, f"batch-from-version-{width}")
